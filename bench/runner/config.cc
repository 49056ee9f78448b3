#include "bench/runner/config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/engine.h"
#include "engine/qstore_placement.h"
#include "policies/policy.h"

namespace corral {
namespace bench {
namespace {

absl::Status Bad(absl::string_view key, absl::string_view value, absl::string_view want) {
  return absl::InvalidArgumentError(
      absl::StrCat("bad value '", value, "' for ", key, " (want ", want, ")"));
}

template <typename T>
absl::Status Num(absl::string_view key, absl::string_view v, T* out) {
  if (!absl::SimpleAtoi(v, out)) return Bad(key, v, "an integer");
  return absl::OkStatus();
}
absl::Status Dbl(absl::string_view key, absl::string_view v, double* out) {
  if (!absl::SimpleAtod(v, out)) return Bad(key, v, "a number");
  return absl::OkStatus();
}

absl::Status Bool(absl::string_view key, absl::string_view v, bool* out) {
  std::string b = absl::AsciiStrToLower(v);
  if (b == "true" || b == "on" || b == "1" || b == "yes") *out = true;
  else if (b == "false" || b == "off" || b == "0" || b == "no") *out = false;
  else return Bad(key, v, "on|off");
  return absl::OkStatus();
}

// A sequencer's batching (calvin_batch, qstore_batch): "time:US" or
// "count:N[:US]"; a bad value changes nothing.
absl::Status Batch(absl::string_view key, absl::string_view v, int* txns, double* us_out) {
  std::vector<std::string> parts = absl::StrSplit(absl::AsciiStrToLower(v), ':');
  const char* want = "time:US | count:N[:US]";
  int n = 0;
  double us = 0;
  if (parts.size() == 2 && parts[0] == "time" && absl::SimpleAtod(parts[1], &us) && us > 0) {
    *txns = 0;
    *us_out = us;
    return absl::OkStatus();
  }
  if ((parts.size() == 2 || parts.size() == 3) && parts[0] == "count" &&
      absl::SimpleAtoi(parts[1], &n) && n > 0) {
    us = 1000;
    if (parts.size() == 3 && !(absl::SimpleAtod(parts[2], &us) && us > 0)) return Bad(key, v, want);
    *txns = n;
    *us_out = us;
    return absl::OkStatus();
  }
  return Bad(key, v, want);
}

}  // namespace

const std::vector<std::string>& SettingKeys() {
  static const std::vector<std::string> k = {
      "backend", "conninfo", "workload", "protocol", "policy", "queues", "threads", "clients",
      "arrival_rate", "warehouses", "scale", "theta", "hot_fraction", "hot_size", "skew_phases",
      "duration", "warmup", "phase1", "repeat", "mode", "seed", "stealing", "retry_wait_us", "max_attempts",
      "progress", "sample", "show_learned", "txn_delay_us", "insert_refs", "ref_multiplicity",
      "pg_seqscan", "history_half_life_s", "split_max_k", "rebalance", "tpcc_mix", "tpcc_rows", "update_rate",
      "calvin_batch", "qstore_batch", "qstore_queues", "qstore_planners", "qstore_placement",
      "qstore_learn_txns", "qstore_execution", "route_on", "sets",
      "orthrus_cc_threads"};
  return k;
}

int EffectiveClients(const BenchConfig& c) { return c.clients > 0 ? c.clients : 2 * c.queues; }

bool IsAutoPolicy(const BenchConfig& c) { return c.policy == "auto"; }

double EffectiveHalfLifeS(const BenchConfig& c) {
  if (c.history_half_life_s >= 0) return c.history_half_life_s;
  return c.mode == RunMode::kOnline ? 1.0 : 0.0;
}

int EffectiveSplitMaxK(const BenchConfig& c) {
  if (c.split_max_k >= 1) return c.split_max_k;
  return c.mode == RunMode::kOnline ? 4 : 1;
}

absl::Status ApplySetting(BenchConfig* c, absl::string_view key_in, absl::string_view value_in) {
  std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(key_in));
  absl::string_view v = absl::StripAsciiWhitespace(value_in);
  if (key == "backend") { c->backend = std::string(v); return absl::OkStatus(); }
  if (key == "conninfo") { c->conninfo = std::string(v); return absl::OkStatus(); }
  if (key == "workload") { c->workload = absl::AsciiStrToLower(v); return absl::OkStatus(); }
  if (key == "protocol") { c->protocol = absl::AsciiStrToLower(v); return absl::OkStatus(); }
  if (key == "policy") {
    if (absl::AsciiStrToLower(v) == "auto") {
      c->policy = "auto";
      return absl::OkStatus();
    }
    if (!ParsePolicy(v).ok()) return ParsePolicy(v).status();
    c->policy = PolicyName(*ParsePolicy(v));
    return absl::OkStatus();
  }
  if (key == "queues" || key == "threads") return Num(key, v, &c->queues);
  if (key == "clients") return Num(key, v, &c->clients);
  if (key == "arrival_rate") return Dbl(key, v, &c->arrival_rate);
  if (key == "warehouses") return Num(key, v, &c->warehouses);
  if (key == "scale") return Dbl(key, v, &c->scale);
  if (key == "theta") return Dbl(key, v, &c->theta);
  if (key == "update_rate") return Dbl(key, v, &c->update_rate);
  if (key == "tpcc_mix") {
    std::string m = absl::AsciiStrToLower(v);
    if (m != "standard" && m != "np" && m != "payment" && m != "neworder") {
      return Bad(key, v, "standard|np|payment|neworder");
    }
    c->tpcc_mix = m;
    return absl::OkStatus();
  }
  if (key == "tpcc_rows") {
    std::string m = absl::AsciiStrToLower(v);
    if (m != "all" && m != "dbx1000") return Bad(key, v, "all|dbx1000");
    c->tpcc_rows = m;
    return absl::OkStatus();
  }
  if (key == "sets") {
    std::string m = absl::AsciiStrToLower(v);
    if (m != "declared" && m != "sql") return Bad(key, v, "declared|sql");
    c->sets = m;
    return absl::OkStatus();
  }
  if (key == "calvin_batch") return Batch(key, v, &c->calvin_batch_txns, &c->calvin_batch_us);
  if (key == "qstore_batch") return Batch(key, v, &c->qstore_batch_txns, &c->qstore_batch_us);
  if (key == "qstore_queues" || key == "qstore_planners") {
    int n = 0;
    absl::Status st = Num(key, v, &n);
    if (!st.ok()) return st;
    if (n < 1 || (key == "qstore_planners" && n > 64)) {
      return Bad(key, v, key == "qstore_queues" ? ">= 1" : "1..64");
    }
    (key == "qstore_queues" ? c->qstore_queues : c->qstore_planners) = n;
    return absl::OkStatus();
  }
  if (key == "qstore_placement") {
    auto p = engine::ParseQueuePlacement(v);
    if (!p.ok()) return Bad(key, v, "hash|range|learned");
    c->qstore_placement = engine::QueuePlacementName(*p);
    return absl::OkStatus();
  }
  if (key == "qstore_execution") {
    const std::string e = absl::AsciiStrToLower(v);
    if (e != "conservative" && e != "speculative") return Bad(key, v, "conservative|speculative");
    c->qstore_execution = e;
    return absl::OkStatus();
  }
  if (key == "route_on") {
    const std::string e = absl::AsciiStrToLower(v);
    if (e != "all" && e != "first" && e != "templates") return Bad(key, v, "all|first|templates");
    c->route_on = e;
    return absl::OkStatus();
  }
  if (key == "qstore_learn_txns") {
    int64_t n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < 1) return Bad(key, v, ">= 1");
    c->qstore_learn_txns = n;
    return absl::OkStatus();
  }
  if (key == "orthrus_cc_threads") {
    int n = 0;
    if (!absl::SimpleAtoi(v, &n) || n < 1 || n > engine::kMaxOrthrusCcThreads) {
      return Bad(key, v, absl::StrCat("1..", engine::kMaxOrthrusCcThreads));
    }
    c->orthrus_cc_threads = n;
    return absl::OkStatus();
  }
  if (key == "hot_fraction") return Dbl(key, v, &c->hot_fraction);
  if (key == "hot_size") return Num(key, v, &c->hot_size);
  if (key == "duration") return Dbl(key, v, &c->duration_s);
  if (key == "warmup") return Dbl(key, v, &c->warmup_s);
  if (key == "phase1" || key == "phase_1") return Dbl(key, v, &c->phase1_s);
  if (key == "repeat") return Num(key, v, &c->repeat);
  if (key == "seed") return Num(key, v, &c->seed);
  if (key == "max_attempts") return Num(key, v, &c->max_attempts);
  if (key == "progress") return Dbl(key, v, &c->progress_s);
  if (key == "sample") return Dbl(key, v, &c->sample_s);
  if (key == "insert_refs") {
    std::string m = absl::AsciiStrToLower(v);
    if (m == "all") c->insert_refs = InsertRefs::kAll;
    else if (m == "foreign-keys" || m == "foreign_keys" || m == "fk") c->insert_refs = InsertRefs::kForeignKeys;
    else return Bad(key, v, "all | foreign-keys");
    return absl::OkStatus();
  }
  if (key == "txn_delay_us") return Dbl(key, v, &c->txn_delay_us);
  if (key == "history_half_life_s") return Dbl(key, v, &c->history_half_life_s);
  if (key == "split_max_k") return Num(key, v, &c->split_max_k);
  if (key == "rebalance") return Bool(key, v, &c->rebalance);
  if (key == "show_learned") return Num(key, v, &c->show_learned);
  if (key == "retry_wait_us") return Dbl(key, v, &c->retry_wait_us);
  if (key == "ref_multiplicity") return Bool(key, v, &c->ref_multiplicity);
  if (key == "pg_seqscan") return Bool(key, v, &c->pg_seqscan);
  if (key == "stealing") return Bool(key, v, &c->stealing);
  if (key == "mode") {
    std::string m = absl::AsciiStrToLower(v);
    if (m == "phased") c->mode = RunMode::kPhased;
    else if (m == "online") c->mode = RunMode::kOnline;
    else return Bad(key, v, "phased|online");
    return absl::OkStatus();
  }
  if (key == "skew_phases") {
    c->skew_phases.clear();
    // "duration:theta" items separated by ';' or whitespace (',' also works
    // for the CLI; spec lists split on ',' before reaching here).
    for (absl::string_view item : absl::StrSplit(v, absl::ByAnyChar(",; "), absl::SkipEmpty())) {
      std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
      workloads::SkewPhase p;
      // An empty field keeps the workload's default ("5::0.9:50:200").
      auto field = [&](size_t i, auto* out) {
        return parts.size() <= i || parts[i].empty() || absl::SimpleAtod(parts[i], out);
      };
      double size = -1, offset = 0;
      if (parts.size() < 2 || parts.size() > 5 || !absl::SimpleAtod(parts[0], &p.duration_s) ||
          !field(1, &p.zipf_theta) || !field(2, &p.hot_fraction) || !field(3, &size) || !field(4, &offset)) {
        return Bad(key, item, "duration_s:zipf_theta[:hot_fraction[:hot_size[:hot_offset]]]");
      }
      p.hot_size = static_cast<int64_t>(size);
      p.hot_offset = static_cast<int64_t>(offset);
      c->skew_phases.push_back(p);
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown key '", key, "' (known: ", absl::StrJoin(SettingKeys(), ", "), ")"));
}

absl::Status Validate(const BenchConfig& c) {
  if (!IsAutoPolicy(c) && !ParsePolicy(c.policy).ok()) return ParsePolicy(c.policy).status();
  if (c.backend == "engine") {
    bool known = false;
    for (const auto& p : engine::ProtocolNames()) known |= p == c.protocol;
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("unknown protocol '", c.protocol, "' (known: ",
                                                     absl::StrJoin(engine::ProtocolNames(), ", "), ")"));
    }
    if (c.queues < 1 || c.queues > 62) {
      return absl::InvalidArgumentError(absl::StrCat("queues=", c.queues, " not in 1..62 (engine worker slots)"));
    }
  } else if (c.queues < 1) {
    return absl::InvalidArgumentError("queues must be >= 1");
  }
  if (c.sets == "sql" && c.backend != "engine") {
    return absl::InvalidArgumentError("sets=sql needs backend=engine (the planned protocols' read/write sets)");
  }
  if (c.duration_s <= 0) return absl::InvalidArgumentError("duration must be > 0");
  if (c.warmup_s < 0 || c.phase1_s < 0) return absl::InvalidArgumentError("warmup/phase1 must be >= 0");
  if (c.repeat < 1) return absl::InvalidArgumentError("repeat must be >= 1");
  if (c.arrival_rate < 0) return absl::InvalidArgumentError("arrival_rate must be >= 0");
  if (c.txn_delay_us < 0) return absl::InvalidArgumentError("txn_delay_us must be >= 0");
  if (c.update_rate > 1) return absl::InvalidArgumentError("update_rate must be <= 1 (a fraction of transactions)");
  if (!c.tpcc_mix.empty() && c.workload != "tpcc" && c.workload != "tpcc-np") {
    return absl::InvalidArgumentError(absl::StrCat("tpcc_mix applies to workload tpcc, not ", c.workload));
  }
  if (!c.tpcc_rows.empty() && c.workload != "tpcc" && c.workload != "tpcc-np") {
    return absl::InvalidArgumentError(absl::StrCat("tpcc_rows applies to workload tpcc, not ", c.workload));
  }
  if (c.update_rate >= 0 && c.workload != "ycsb") {
    return absl::InvalidArgumentError(absl::StrCat("update_rate applies to workload ycsb, not ", c.workload));
  }
  if (c.clients < 0) return absl::InvalidArgumentError("clients must be >= 0");
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace corral
