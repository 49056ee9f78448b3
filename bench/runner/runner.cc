#include "bench/runner/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <thread>

#include <time.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "bench/runner/read_file.h"
#include "adapters/proxy/templates.h"
#include "bench/runner/sql_refs.h"
#include "bench/workloads/sql_sets.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "policies/policy.h"
#include "scheduler/histogram.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace bench {

// ---------------------------------------------------------------- backend

namespace {

class EngineInstance : public BackendInstance {
 public:
  std::unique_ptr<engine::Database> db;
  std::vector<std::unique_ptr<engine::EngineExecutor>> executors;
  std::unique_ptr<workloads::SqlSets> sql_sets;  // sets=sql: every transaction's read/write set
  std::string placement;                         // qstore_placement
  std::string execution;                         // qstore_execution

  std::unique_ptr<scheduler::Txn> PrepareTxn(std::unique_ptr<workloads::WorkloadTxn> t) override {
    if (sql_sets != nullptr) t->set_access_deriver(sql_sets.get());
    return t;
  }

  std::vector<scheduler::Executor*> Executors() override {
    std::vector<scheduler::Executor*> out;
    for (auto& e : executors) out.push_back(e.get());
    return out;
  }
  absl::Status Check(const workloads::Workload& w) override { return w.Check(*db); }
  bool ExecutorCounts(uint64_t* commits, uint64_t* conflict_aborts) override {
    *commits = 0;
    *conflict_aborts = 0;
    for (auto& e : executors) {
      *commits += e->stats().commits;
      *conflict_aborts += e->stats().total_conflicts();
    }
    return true;
  }
  double QueuesPerTxn() override {
    if (db->protocol() != "qstore") return 0;
    uint64_t requests = 0, spans = 0;
    for (auto& e : executors) {
      requests += e->stats().lock_requests;
      spans += e->stats().queue_spans;
    }
    return requests > 0 ? static_cast<double>(spans) / requests : 0;
  }
  std::string PlanReport() override {
    if (db->protocol() != "calvin" && db->protocol() != "planned" && db->protocol() != "qstore" &&
        db->protocol() != "orthrus") {
      return "";
    }
    engine::ExecutorStats t;
    for (auto& e : executors) {
      const engine::ExecutorStats& s = e->stats();
      t.commits += s.commits;
      t.user_aborts += s.user_aborts;
      t.declared += s.declared;
      t.recons += s.recons;
      t.replans += s.replans;
      t.recon_ns += s.recon_ns;
      t.sequence_ns += s.sequence_ns;
      t.lock_wait_ns += s.lock_wait_ns;
      t.exec_ns += s.exec_ns;
      t.spec_dependencies += s.spec_dependencies;
      t.spec_early_releases += s.spec_early_releases;
      t.spec_late_accesses += s.spec_late_accesses;
      t.conflicts[static_cast<size_t>(scheduler::AbortCause::kCascade)] +=
          s.conflicts[static_cast<size_t>(scheduler::AbortCause::kCascade)];
    }
    const double n = static_cast<double>(t.commits + t.user_aborts);
    auto us = [n](int64_t ns) { return n > 0 ? ns / n / 1000.0 : 0.0; };
    std::string report = absl::StrFormat(
        "planned (sets=%s): %llu declared, %llu reconnaissance runs, %llu re-plans; per finished txn (us): "
        "recon %.1f, sequencing %.1f, lock wait %.1f, execution %.1f",
        sql_sets != nullptr ? "sql" : "declared", (unsigned long long)t.declared, (unsigned long long)t.recons,
        (unsigned long long)t.replans, us(t.recon_ns), us(t.sequence_ns), us(t.lock_wait_ns),
        us(t.exec_ns));
    if (db->protocol() == "qstore") {
      absl::StrAppend(&report, absl::StrFormat("; qstore placement %s: %.2f queues per transaction (%s)", placement,
                                               QueuesPerTxn(), db->ProtocolReport()));
      if (execution == "speculative") {
        absl::StrAppend(
            &report,
            absl::StrFormat("; speculative: %llu speculation dependencies, %llu queues given up early, "
                            "%llu late re-runs, %llu cascading aborts",
                            (unsigned long long)t.spec_dependencies, (unsigned long long)t.spec_early_releases,
                            (unsigned long long)t.spec_late_accesses,
                            (unsigned long long)t.conflicts[static_cast<size_t>(scheduler::AbortCause::kCascade)]));
      }
    }
    return report;
  }
};

class EngineBackend : public Backend {
 public:
  std::string name() const override { return "engine"; }
  absl::StatusOr<std::unique_ptr<BackendInstance>> Open(const BenchConfig& c,
                                                        workloads::Workload& w) override {
    auto inst = std::make_unique<EngineInstance>();
    engine::DatabaseOptions o;
    o.protocol = c.protocol;
    o.calvin_batch_txns = c.calvin_batch_txns;
    o.calvin_batch_ns = static_cast<int64_t>(c.calvin_batch_us * 1000);
    o.qstore_batch_txns = c.qstore_batch_txns;
    o.qstore_batch_ns = static_cast<int64_t>(c.qstore_batch_us * 1000);
    o.qstore_queues = c.qstore_queues;
    o.qstore_planners = c.qstore_planners;
    o.qstore_placement = c.qstore_placement;
    o.qstore_learn_txns = c.qstore_learn_txns;
    o.qstore_execution = c.qstore_execution;
    o.orthrus_cc_threads = c.orthrus_cc_threads;
    auto db = engine::Database::Create(o);
    if (!db.ok()) return db.status();
    inst->db = std::move(*db);
    inst->placement = c.qstore_placement;
    inst->execution = c.qstore_execution;
    absl::Status st = w.Load(inst->db.get());
    if (!st.ok()) return st;
    if (c.sets == "sql") {
      // Every INSERT column must yield its reference (the rows' keys).
      auto schema = LoadSchemaFile(w.schema_file(), InsertRefs::kAll);
      if (!schema.ok()) return schema.status();
      auto sets = workloads::SqlSets::Create(w.name(), *inst->db, *schema);
      if (!sets.ok()) return sets.status();
      inst->sql_sets = std::move(*sets);
    }
    for (int i = 0; i < c.queues; ++i) {
      engine::ExecutorOptions eo;
      if (c.retry_wait_us >= 0) eo.obstacle_wait_ns = static_cast<int64_t>(c.retry_wait_us * 1000);
      eo.txn_delay_ns = static_cast<int64_t>(c.txn_delay_us * 1000);
      auto ex = inst->db->NewExecutor(i, eo);
      if (!ex.ok()) return ex.status();
      inst->executors.push_back(std::move(*ex));
    }
    return std::unique_ptr<BackendInstance>(std::move(inst));
  }
};

int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// The thread CPU clock's own cost: the median of 201 empty intervals
// (each interval between two reads counts about one read's system call).
double ThreadCpuProbeNanos() {
  std::vector<int64_t> d(201);
  for (int64_t& x : d) {
    const int64_t a = ThreadCpuNanos();
    x = ThreadCpuNanos() - a;
  }
  std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
  return static_cast<double>(d[d.size() / 2]);
}

double Pct(uint64_t a, uint64_t b) { return a + b == 0 ? 0.0 : static_cast<double>(a) / (a + b); }

}  // namespace

std::unique_ptr<Backend> MakeEngineBackend() { return std::make_unique<EngineBackend>(); }

absl::StatusOr<std::shared_ptr<const Schema>> LoadSchemaFile(const std::string& path, InsertRefs insert_refs) {
  std::vector<std::string> candidates = {path};
  if (const char* d = std::getenv("BUILD_WORKSPACE_DIRECTORY")) candidates.push_back(absl::StrCat(d, "/", path));
  if (const char* d = std::getenv("TEST_SRCDIR")) candidates.push_back(absl::StrCat(d, "/corral/", path));
  if (const char* d = std::getenv("CORRAL_ROOT")) candidates.push_back(absl::StrCat(d, "/", path));
  std::string text;
  for (const auto& p : candidates) {
    if (ReadWholeFile(p, &text)) {
      SchemaBuilder b;
      b.SetInsertRefs(insert_refs);
      absl::Status st = b.AddDdl(text);
      if (!st.ok()) return absl::InvalidArgumentError(absl::StrCat(p, ": ", st.message()));
      return b.Build();
    }
  }
  return absl::NotFoundError(absl::StrCat("schema file not found: ", path,
                                          " (run from the repository root or set CORRAL_ROOT)"));
}

// ---------------------------------------------------------------- runner

struct Runner::RunSpec {
  Policy sched_policy;           // the routing policy of this run
  ExtractionPolicy extraction;
  bool extract = false;          // fill Txn::refs
  const LearnedHistory* load = nullptr;
  bool freeze = false;
  double warmup_s = 0, duration_s = 0;
  uint64_t seed = 1;
  LearnedHistory* save = nullptr;
  const char* label = "";
};

Runner::Runner(std::unique_ptr<Backend> backend, WorkloadFactory factory, std::shared_ptr<MachineProbe> probe)
    : backend_(std::move(backend)),
      factory_(std::move(factory)),
      probe_(probe != nullptr ? std::move(probe) : std::shared_ptr<MachineProbe>(MakeProcMachineProbe())) {}

absl::StatusOr<std::shared_ptr<RefExtractor>> Runner::ExtractorFor(const workloads::Workload& w,
                                                                   InsertRefs insert_refs) {
  const std::string file = w.schema_file();
  const std::string key = absl::StrCat(file, insert_refs == InsertRefs::kAll ? "|all" : "|fk");
  auto it = extractors_.find(key);
  if (it != extractors_.end()) return it->second;
  auto schema = LoadSchemaFile(file, insert_refs);
  if (!schema.ok()) return schema.status();
  auto ex = std::make_shared<RefExtractor>(*schema);
  extractors_[key] = ex;
  return ex;
}

namespace {

enum class RouteOnMode { kAll, kFirst, kTemplates };

// Per generating thread (worker i, or the controller/generator = last).
struct alignas(64) GenCtx {
  explicit GenCtx(uint64_t seed) : rng(seed) {}
  workloads::Rng rng;
  workloads::BoundSql bound;  // the transaction's statements, reused
  int64_t extract_ns = 0, submit_ns = 0, generated = 0, extract_errors = 0, submit_errors = 0;
  int64_t extract_cpu_ns = 0, submit_cpu_ns = 0, statements = 0;
  int64_t cpu_sampled = 0;  // transactions whose thread CPU was timed
  SqlRefs::Local sql_refs;  // this thread's index of prepared templates
  // route_on = first / templates (RouteOn): the statements' text form, and
  // this thread's statement templates (templates only).
  std::vector<workloads::SqlStatement> sql;
  std::vector<ParamValue> params;
  std::unique_ptr<proxy::Templates> templates;
  proxy::TxnTrace trace;
  uint64_t route_seen = 0, route_all = 0, route_predicted = 0;
  size_t refs_reserve = 16;  // largest reference count seen: one allocation per txn
  uint64_t hook_commits = 0;
  scheduler::LatencyHistogram latency;  // measured window only
};

// route_on = first / templates: t->refs (everything the transaction
// touches) becomes what the History learns from (learn_refs), and t->refs
// what routing sees before it runs, as a proxy sees it: its first statement
// with references, plus (templates) the later references this thread's
// statement templates predict from that statement; the templates then learn
// the transaction's statements (a proxy learns them at its end; the runner
// knows them now, and a prediction is made before learning this one).
void RouteOn(bool templates, RefExtractor& ex, const ExtractionPolicy& policy, workloads::WorkloadTxn* t,
             GenCtx& g) {
  g.sql.clear();
  t->AppendSql(&g.sql);
  RefVec first;
  size_t first_at = g.sql.size();
  auto stmt_of = [&](const workloads::SqlStatement& s) {
    std::vector<std::string> values;
    for (const auto& p : s.params) values.push_back(p.is_null ? std::string(proxy::kUnknownLiteral) : std::string(p.value()));
    return proxy::Stmt::FromExtended(s.tmpl, std::move(values));
  };
  for (size_t i = 0; i < g.sql.size() && first.empty(); ++i) {
    g.params.clear();
    for (const auto& p : g.sql[i].params) g.params.push_back(ParamValue{p.value(), p.is_null});
    if (ex.Extract(g.sql[i].tmpl, policy, ParamSpan(g.params), &first).ok() && !first.empty()) first_at = i;
  }
  t->learn_refs = std::move(t->refs);
  t->refs = std::move(first);
  t->ref_mult.clear();  // multiplicity is of all the statements' references
  if (templates && first_at < g.sql.size()) {
    if (g.templates == nullptr) g.templates = std::make_unique<proxy::Templates>(proxy::Templates::Options{});
    const proxy::Stmt head = stmt_of(g.sql[first_at]);
    RefVec predicted;
    if (g.templates->PredictRefs(head, ex, policy, &predicted) > 0) {
      ++g.route_predicted;
      for (RefId r : predicted) {
        if (std::find(t->refs.begin(), t->refs.end(), r) == t->refs.end()) t->refs.push_back(r);
      }
    }
    g.trace.clear();
    for (size_t i = first_at; i < g.sql.size() && g.trace.size() <= proxy::Templates::kMaxPositions; ++i) {
      g.trace.push_back(stmt_of(g.sql[i]));
    }
    g.templates->Learn(g.trace);
  }
  for (RefId r : t->refs) {
    if (std::find(t->learn_refs.begin(), t->learn_refs.end(), r) != t->learn_refs.end()) ++g.route_seen;
  }
  g.route_all += t->learn_refs.size();
}

void SubtractInto(const scheduler::WorkerStats& a, const scheduler::WorkerStats& b,
                  const std::vector<std::string>& type_names, RunMetrics* m) {
  m->commits = b.commits - a.commits;
  m->conflict_aborts = b.conflict_aborts - a.conflict_aborts;
  m->user_aborts = b.user_aborts - a.user_aborts;
  m->failures = b.failures - a.failures;
  m->gave_up = b.gave_up - a.gave_up;
  m->steals = b.steals - a.steals;
  for (size_t i = 0; i < m->aborts_by_cause.size(); ++i) {
    m->aborts_by_cause[i] = b.aborts_by_cause[i] - a.aborts_by_cause[i];
  }
  std::vector<int32_t> keys;
  for (const auto& kv : b.per_type) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  for (int32_t k : keys) {
    const scheduler::TypeCounts& tb = b.per_type.at(k);
    scheduler::TypeCounts ta;
    auto it = a.per_type.find(k);
    if (it != a.per_type.end()) ta = it->second;
    TypeResult t;
    t.name = (k >= 0 && k < static_cast<int32_t>(type_names.size())) ? type_names[k] : absl::StrCat("type", k);
    t.commits = tb.commits - ta.commits;
    t.conflict_aborts = tb.conflict_aborts - ta.conflict_aborts;
    t.user_aborts = tb.user_aborts - ta.user_aborts;
    t.failures = tb.failures - ta.failures;
    m->per_type.push_back(t);
  }
}

}  // namespace

absl::StatusOr<RunMetrics> Runner::RunOnce(const BenchConfig& c, const RunSpec& spec) {
  auto wl = factory_(c);
  if (!wl.ok()) return wl.status();
  workloads::Workload& w = **wl;
  auto inst_or = backend_->Open(c, w);
  if (!inst_or.ok()) return inst_or.status();
  std::unique_ptr<BackendInstance> inst = std::move(*inst_or);

  std::shared_ptr<RefExtractor> extractor;
  std::unique_ptr<SqlRefs> sql_refs;  // this run's prepared templates
  if (spec.extract) {
    auto ex = ExtractorFor(w, c.insert_refs);
    if (!ex.ok()) return ex.status();
    extractor = *ex;
    sql_refs = std::make_unique<SqlRefs>(extractor);
  }
  const Clock* clock = Clock::Real();
  if (c.mode == RunMode::kOnline && !c.skew_phases.empty()) {
    w.SetPhaseSchedule(c.skew_phases, clock);
  } else if (c.theta >= 0 || c.hot_fraction >= 0 || c.hot_size >= 0) {
    workloads::SkewPhase p;
    p.duration_s = 1e9;
    p.zipf_theta = c.theta;
    p.hot_fraction = c.hot_fraction;
    p.hot_size = c.hot_size;
    w.SetPhaseSchedule({p}, nullptr);
    w.SetPhase(0);
  }


  RunMetrics m;
  const int nq = c.queues;
  std::vector<std::unique_ptr<GenCtx>> ctx;
  for (int i = 0; i <= nq; ++i) ctx.push_back(std::make_unique<GenCtx>(spec.seed * 1000003 + i * 7919 + 17));
  std::atomic<bool> stop{false};
  std::atomic<bool> measuring{false};
  const bool closed = c.arrival_rate <= 0;
  scheduler::Scheduler* sched = nullptr;
  BackendInstance* instp = inst.get();
  const bool auto_policy = IsAutoPolicy(c);
  const RouteOnMode route_on = c.route_on == "first"       ? RouteOnMode::kFirst
                               : c.route_on == "templates" ? RouteOnMode::kTemplates
                                                           : RouteOnMode::kAll;

  auto generate = [&](GenCtx& g) {
    std::unique_ptr<workloads::WorkloadTxn> t = w.Next(g.rng);
    // Thread CPU time is a system call (not vDSO): ~0.6 us each, 4% of all
    // CPU in a TPC-C profile when taken for every transaction. One
    // transaction in kCpuSample is timed; the means are per timed one.
    constexpr int64_t kCpuSample = 16;
    const bool timed = g.generated % kCpuSample == 0;
    const int64_t c0 = timed ? ThreadCpuNanos() : 0;
    const int64_t t0 = clock->NowNanos();
    t->decision_start_ns = t0;
    // auto on a baseline arm (original, hard-partition: no references
    // needed to decide) extracts one transaction in kAutoBaselineSample, so
    // the History keeps learning for the learned arms from a sample (their
    // weights are counts compared with each other, or ratios: a uniform
    // sample keeps both) without every transaction paying the learned
    // path's CPU (measured online, YCSB: auto on original ran 5-8% behind
    // the original cell with every transaction extracted).
    constexpr int64_t kAutoBaselineSample = 4;
    const Policy auto_now = auto_policy ? sched->policy() : Policy();
    const bool extract = extractor != nullptr && (!auto_policy || auto_now.kind == PolicyKind::kLearned ||
                                                  g.generated % kAutoBaselineSample == 0);
    if (extract) {
      // The engine's work on this thread evicted the extraction's per-thread
      // buffers: load them in one burst (timed here, with the extraction),
      // overlapped with the binding.
      g.sql_refs.Prefetch();
      g.bound.PrefetchForWrite();
      g.bound.clear();
      t->AppendBound(&g.bound);
      g.statements += static_cast<int64_t>(g.bound.size());
      // auto: the extraction half of the policy routing now.
      const ExtractionPolicy& ext = auto_policy ? auto_now.extraction : spec.extraction;
      t->refs.reserve(g.refs_reserve);
      if (c.ref_multiplicity) t->ref_mult.reserve(g.refs_reserve);
      g.extract_errors += sql_refs->Extract(g.bound, ext, &g.sql_refs, &t->refs,
                                            c.ref_multiplicity ? &t->ref_mult : nullptr);
      t->refs_distinct = true;  // the extractor never appends a reference twice
      g.refs_reserve = std::max(g.refs_reserve, std::min<size_t>(t->refs.size(), 1024));
      if (route_on != RouteOnMode::kAll) RouteOn(route_on == RouteOnMode::kTemplates, *extractor, ext, t.get(), g);
    }
    const int64_t t1 = clock->NowNanos();
    const int64_t c1 = timed ? ThreadCpuNanos() : 0;
    absl::Status st = sched->Submit(instp->PrepareTxn(std::move(t)));
    const int64_t t2 = clock->NowNanos();
    if (timed) {
      const int64_t c2 = ThreadCpuNanos();
      g.extract_cpu_ns += c1 - c0;
      g.submit_cpu_ns += c2 - c1;
      ++g.cpu_sampled;
    }
    g.extract_ns += t1 - t0;
    g.submit_ns += t2 - t1;
    ++g.generated;
    if (!st.ok()) ++g.submit_errors;
  };

  scheduler::CompletionHook hook = [&](std::unique_ptr<scheduler::Txn> txn,
                                       const scheduler::ExecResult& res, int worker) {
    GenCtx& g = *ctx[worker];
    if (res.outcome == scheduler::Outcome::kCommitted) {
      ++g.hook_commits;
      if (measuring.load(std::memory_order_relaxed)) {
        g.latency.Record(clock->NowNanos() - txn->decision_start_ns);
      }
    }
    txn.reset();
    if (closed && !stop.load(std::memory_order_relaxed)) generate(g);
  };

  scheduler::Scheduler::Options so;
  so.num_queues = nq;
  so.policy = spec.sched_policy;
  so.seed = spec.seed;
  so.stealing = c.stealing;
  so.schedule.ref_multiplicity = c.ref_multiplicity;
  so.workers.max_attempts = c.max_attempts;
  // Online tuning (scheduler.h): aging, hot-spot splitting, auto.
  so.history.half_life_ns = static_cast<int64_t>(EffectiveHalfLifeS(c) * 1e9);
  const int split_k = EffectiveSplitMaxK(c);
  // Splitting off (k = 1) still measures the windows when rebalancing is on.
  so.split.enabled = (split_k > 1 || (c.rebalance && c.mode == RunMode::kOnline)) &&
                     (auto_policy || spec.sched_policy.kind == PolicyKind::kLearned);
  so.split.rule.max_k = split_k;
  so.split.rebalance = c.rebalance;
  // Online, weights move with every burst of aborts (aging): the reference
  // that has led a transaction's kind keeps it unless a rival is 2x heavier
  // (scheduler/schedule.h, "Established lead").
  if (c.mode == RunMode::kOnline) so.schedule.established_lead_share = 0.5;
  // Online, a transaction's aborts do not count for the lead that placed it
  // (scheduler/schedule.h, "Lead-spared aborts").
  if (c.mode == RunMode::kOnline) so.schedule.lead_attributed_aborts = true;
  so.autopolicy.enabled = auto_policy;
  std::mutex log_mu;
  std::vector<std::string> switch_log;
  const int64_t run_start = clock->NowNanos();
  so.log = [&](const std::string& line) {
    const std::string stamped = absl::StrFormat("%.2fs %s", (clock->NowNanos() - run_start) / 1e9, line);
    if (c.progress_s > 0) std::fprintf(stderr, "[%s %s] %s\n", spec.label, c.protocol.c_str(), stamped.c_str());
    if (line.rfind("auto:", 0) == 0) {
      std::lock_guard<std::mutex> l(log_mu);
      switch_log.push_back(stamped);
    }
  };
  auto s_or = scheduler::Scheduler::Create(so, inst->Executors(), hook, clock);
  if (!s_or.ok()) return s_or.status();
  std::unique_ptr<scheduler::Scheduler> s = std::move(*s_or);
  sched = s.get();
  if (spec.load != nullptr) {
    for (const auto& e : spec.load->entries) s->history().Add(e.ref, e.counts.aborts, e.counts.commits);
  }
  if (spec.freeze) s->history().Freeze();
  auto history_sum = [&] {
    uint64_t n = 0;
    for (const auto& e : s->history().TopByAborts(static_cast<size_t>(s->history().size()) + 64)) {
      n += e.counts.aborts + e.counts.commits;
    }
    return n;
  };
  m.history_counts_start = history_sum();

  RefExtractor::Stats ex_before;
  if (extractor) ex_before = extractor->stats();
  absl::Status st = s->Start();
  if (!st.ok()) return st;
  const int64_t start = clock->NowNanos();
  std::thread generator;
  if (closed) {
    for (int i = 0; i < EffectiveClients(c); ++i) generate(*ctx[nq]);
  } else {
    generator = std::thread([&] {
      GenCtx& g = *ctx[nq];
      int64_t next = clock->NowNanos();
      while (!stop.load(std::memory_order_relaxed)) {
        double u = std::max(1e-12, g.rng.Double());
        next += static_cast<int64_t>(-std::log(u) / c.arrival_rate * 1e9);
        int64_t now = clock->NowNanos();
        if (next - now > 200000) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(next - now - 100000));
        }
        while (clock->NowNanos() < next && !stop.load(std::memory_order_relaxed)) std::this_thread::yield();
        generate(g);
      }
    });
  }

  const std::vector<std::string>& names = w.TxnTypeNames();
  const int64_t warm_end = start + static_cast<int64_t>(spec.warmup_s * 1e9);
  const int64_t end = warm_end + static_cast<int64_t>(spec.duration_s * 1e9);
  const int64_t sample_ns = static_cast<int64_t>(std::max(0.05, c.sample_s) * 1e9);
  scheduler::WorkerStats snap0, snap1, prev;
  int64_t prev_t = start, next_sample = start + sample_ns, next_progress = start;
  int64_t t_measure0 = start;
  std::vector<uint64_t> worker_commits0(nq, 0);
  bool warm = spec.warmup_s <= 0;
  absl::StatusOr<MachineReading> machine0 = probe_->Read();
  if (warm) measuring.store(true);
  double last_tps = 0, last_ar = 0;
  for (;;) {
    int64_t now = clock->NowNanos();
    if (!warm && now >= warm_end) {
      snap0 = s->Stats();
      for (int i = 0; i < nq; ++i) worker_commits0[i] = s->WorkerStatsOf(i).commits;
      t_measure0 = clock->NowNanos();
      machine0 = probe_->Read();
      measuring.store(true);
      warm = true;
    }
    // Sample before testing the end, so that a loop starved past `end` (a
    // loaded machine) still records the interval it missed.
    if (now >= next_sample) {
      scheduler::WorkerStats cur = s->Stats();
      double dt = (now - prev_t) / 1e9;
      Sample smp;
      smp.t_s = (now - start) / 1e9;
      smp.tps = dt > 0 ? (cur.commits - prev.commits) / dt : 0;
      smp.abort_rate = Pct(cur.conflict_aborts - prev.conflict_aborts, cur.commits - prev.commits);
      smp.phase = w.phase();
      smp.history_entries = s->history().size();
      smp.history_bytes = s->history().ApproxBytes();
      smp.state_entries = s->state().size();
      smp.state_bytes = s->state().ApproxBytes();
      smp.chosen = PolicyName(s->policy());
      smp.hot_queues = s->HotQueues();
      smp.switches = s->switch_count();
      m.timeline.push_back(smp);
      last_tps = smp.tps;
      last_ar = smp.abort_rate;
      prev = cur;
      prev_t = now;
      next_sample += sample_ns;
      if (c.progress_s > 0 && now >= next_progress) {
        std::fprintf(stderr, "[%s %s %s q=%d] %6.1fs  %9.0f tps  abort %.3f  hist %lld refs  state %lld refs  hot k %d\n",
                     spec.label, c.protocol.c_str(), s->PolicyLabel().c_str(), nq, smp.t_s,
                     last_tps, last_ar, static_cast<long long>(smp.history_entries),
                     static_cast<long long>(smp.state_entries), smp.hot_queues);
        next_progress = now + static_cast<int64_t>(c.progress_s * 1e9);
      }
    }
    if (now >= end) break;
    int64_t wake = std::min({next_sample, end, warm ? end : warm_end});
    int64_t sl = wake - clock->NowNanos();
    if (sl > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(sl, 20000000)));
  }
  snap1 = s->Stats();
  m.worker_commits.resize(nq);
  for (int i = 0; i < nq; ++i) m.worker_commits[i] = s->WorkerStatsOf(i).commits - worker_commits0[i];
  const int64_t t_measure1 = clock->NowNanos();
  absl::StatusOr<MachineReading> machine1 = probe_->Read();
  if (machine0.ok() && machine1.ok()) m.interference = ComputeInterference(*machine0, *machine1);
  measuring.store(false);
  stop.store(true);
  if (generator.joinable()) generator.join();
  s->Stop();
  {
    std::lock_guard<std::mutex> l(log_mu);
    m.switch_log = switch_log;
  }

  m.seconds = (t_measure1 - t_measure0) / 1e9;
  SubtractInto(snap0, snap1, names, &m);
  m.tps = m.seconds > 0 ? m.commits / m.seconds : 0;
  m.abort_rate = Pct(m.conflict_aborts, m.commits);
  scheduler::LatencyHistogram lat;
  int64_t ex_ns = 0, sub_ns = 0, gen = 0, ex_cpu = 0, sub_cpu = 0, stmts = 0, sampled = 0;
  for (auto& g : ctx) {
    lat.Merge(g->latency);
    ex_ns += g->extract_ns;
    sub_ns += g->submit_ns;
    gen += g->generated;
    ex_cpu += g->extract_cpu_ns;
    stmts += g->statements;
    sub_cpu += g->submit_cpu_ns;
    sampled += g->cpu_sampled;
    m.hook_commits += g->hook_commits;
    m.route_seen_refs += g->route_seen;
    m.route_all_refs += g->route_all;
    m.route_predicted_txns += g->route_predicted;
  }
  m.p50_us = lat.Percentile(50) / 1e3;
  m.p95_us = lat.Percentile(95) / 1e3;
  m.p99_us = lat.Percentile(99) / 1e3;
  m.mean_us = lat.mean() / 1e3;
  m.extract_ns = gen ? static_cast<double>(ex_ns) / gen : 0;
  m.sched_cost_ns = gen ? static_cast<double>(ex_ns + sub_ns) / gen : 0;
  // Two timed intervals per sampled transaction (extraction, submit), each
  // less the clock's own cost.
  m.probe_cpu_ns = ThreadCpuProbeNanos();
  m.extract_cpu_ns = sampled ? std::max(0.0, static_cast<double>(ex_cpu) / sampled - m.probe_cpu_ns) : 0;
  m.sched_cpu_ns = sampled ? std::max(0.0, static_cast<double>(ex_cpu + sub_cpu) / sampled - 2 * m.probe_cpu_ns) : 0;
  if (extractor) {
    RefExtractor::Stats ex_after = extractor->stats();
    m.extract_cache_misses = ex_after.misses - ex_before.misses;
    m.extract_cache_hits = static_cast<uint64_t>(stmts) > m.extract_cache_misses
                               ? static_cast<uint64_t>(stmts) - m.extract_cache_misses
                               : 0;
  }
  scheduler::WorkerStats total = s->Stats();
  m.total_commits = total.commits;
  m.total_conflict_aborts = total.conflict_aborts;
  m.have_executor_counts = inst->ExecutorCounts(&m.executor_commits, &m.executor_conflict_aborts);
  m.plan_report = inst->PlanReport();
  m.queues_per_txn = inst->QueuesPerTxn();
  m.history_entries = s->history().size();
  m.history_bytes = s->history().ApproxBytes();
  m.state_entries = s->state().size();
  m.state_bytes = s->state().ApproxBytes();
  m.history_counts_end = history_sum();
  if (spec.save != nullptr) {
    spec.save->entries = s->history().TopByAborts(static_cast<size_t>(s->history().size()) + 64);
  }
  if (spec.load != nullptr && c.show_learned > 0) {
    const size_t k = std::min(spec.load->entries.size(), static_cast<size_t>(c.show_learned));
    for (size_t i = 0; i < k; ++i) {
      std::vector<uint64_t> row(static_cast<size_t>(nq));
      if (!s->state().ReadRow(spec.load->entries[i].ref, row.data())) row.clear();
      m.learned_rows.push_back(std::move(row));
    }
  }
  s.reset();
  m.check = inst->Check(w);
  return m;
}

void Runner::NameReferences(const BenchConfig& c, const ExtractionPolicy& policy,
                            std::vector<history::History::TopEntry>* entries) {
  // The History keeps no texts on the hot path; name the references by
  // extracting (with texts) a sample of freshly generated transactions.
  auto wl = factory_(c);
  if (!wl.ok()) return;
  auto ex = ExtractorFor(**wl, c.insert_refs);
  if (!ex.ok()) return;
  absl::flat_hash_map<uint64_t, std::string> names;
  for (const auto& e : *entries) names[e.ref.value()];
  workloads::Rng rng(c.seed ^ 0x5bd1e995ULL);
  std::vector<workloads::SqlStatement> sql;
  std::vector<ParamValue> params;
  size_t found = 0;
  for (int i = 0; i < 20000 && found < names.size(); ++i) {
    std::unique_ptr<workloads::WorkloadTxn> t = (*wl)->Next(rng);
    sql.clear();
    t->AppendSql(&sql);
    for (const auto& s : sql) {
      params.clear();
      for (const auto& p : s.params) params.push_back(ParamValue{p.value(), p.is_null});
      RefVec ids;
      std::vector<std::string> texts;
      if (!(*ex)->Extract(s.tmpl, policy, ParamSpan(params), &ids, &texts).ok()) continue;
      for (size_t j = 0; j < ids.size() && j < texts.size(); ++j) {
        auto it = names.find(ids[j].value());
        if (it != names.end() && it->second.empty()) {
          it->second = texts[j];
          ++found;
        }
      }
    }
  }
  for (auto& e : *entries) {
    if (e.text.empty()) e.text = names[e.ref.value()];
  }
}

absl::StatusOr<BenchResult> Runner::Run(const BenchConfig& c, const LearnedHistory* learned,
                                        LearnedHistory* learned_out, int first_rep) {
  absl::Status st = Validate(c);
  if (!st.ok()) return st;
  // auto starts on its first arm (the Scheduler switches from there).
  auto pol = IsAutoPolicy(c) ? absl::StatusOr<Policy>(scheduler::Scheduler::DefaultAutoArms()[0])
                             : ParsePolicy(c.policy);
  if (!pol.ok()) return pol.status();
  BenchResult r;
  r.config = c;
  const bool is_learned = pol->kind == PolicyKind::kLearned;
  RunSpec base;
  base.sched_policy = *pol;
  base.extraction = pol->extraction;
  base.extract = is_learned;

  if (c.mode == RunMode::kOnline) {
    RunSpec sp = base;
    sp.warmup_s = c.warmup_s;
    sp.duration_s = c.duration_s;
    sp.seed = c.seed + 1000 * static_cast<uint64_t>(first_rep);
    sp.label = "online";
    auto m = RunOnce(c, sp);
    if (!m.ok()) return m.status();
    r.runs.push_back(std::move(*m));
  } else {
    LearnedHistory local;
    const LearnedHistory* hist = learned;
    if (is_learned && hist == nullptr) {
      RunSpec p1 = base;
      p1.sched_policy = *ParsePolicy("original");  // random scheduling, learning
      p1.warmup_s = 0;
      p1.duration_s = std::max(0.05, c.phase1_s);
      p1.seed = (c.seed + 1000 * static_cast<uint64_t>(first_rep)) ^ 0x9e3779b97f4a7c15ULL;
      p1.save = &local;
      p1.label = "phase1";
      auto m = RunOnce(c, p1);
      if (!m.ok()) return m.status();
      r.has_phase1 = true;
      r.phase1 = std::move(*m);
      hist = &local;
    }
    if (hist != nullptr) {
      r.learned_refs = static_cast<int64_t>(hist->entries.size());
      // entries are sorted by aborts, most first (TopByAborts).
      const size_t k = std::min(hist->entries.size(), static_cast<size_t>(std::max(0, c.show_learned)));
      r.top_learned.assign(hist->entries.begin(), hist->entries.begin() + k);
      if (k > 0) NameReferences(c, base.extraction, &r.top_learned);
    }
    if (learned_out != nullptr && hist != nullptr) *learned_out = *hist;
    for (int i = 0; i < c.repeat; ++i) {
      RunSpec p2 = base;
      p2.load = hist;
      p2.freeze = true;
      p2.warmup_s = c.warmup_s;
      p2.duration_s = c.duration_s;
      p2.seed = c.seed + 1000 * static_cast<uint64_t>(first_rep + i + 1);
      p2.label = "phase2";
      auto m = RunOnce(c, p2);
      if (!m.ok()) return m.status();
      r.runs.push_back(std::move(*m));
    }
  }
  std::vector<double> tps, ar, p50, p99, cost;
  for (const auto& m : r.runs) {
    tps.push_back(m.tps);
    ar.push_back(m.abort_rate);
    p50.push_back(m.p50_us);
    p99.push_back(m.p99_us);
    cost.push_back(m.sched_cost_ns);
    r.all_checks_ok &= m.check.ok();
  }
  if (r.has_phase1) r.all_checks_ok &= r.phase1.check.ok();
  r.tps = ComputeMeanCi(tps);
  r.abort_rate = ComputeMeanCi(ar);
  r.p50_us = ComputeMeanCi(p50);
  r.p99_us = ComputeMeanCi(p99);
  r.sched_cost_ns = ComputeMeanCi(cost);
  return r;
}

// ---------------------------------------------------------------- output

namespace {
std::string ModeName(RunMode m) { return m == RunMode::kOnline ? "online" : "phased"; }
std::string JsonStr(absl::string_view s) {
  std::string o = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) { o += ' '; continue; }
    o += ch;
  }
  return o + "\"";
}
}  // namespace

void PrintReport(const BenchResult& r, std::FILE* out) {
  const BenchConfig& c = r.config;
  std::fprintf(out, "workload=%s protocol=%s policy=%s queues=%d clients=%s mode=%s backend=%s\n",
               c.workload.c_str(), c.protocol.c_str(), c.policy.c_str(), c.queues,
               c.arrival_rate > 0 ? absl::StrFormat("open@%.0f/s", c.arrival_rate).c_str()
                                  : absl::StrCat(EffectiveClients(c)).c_str(),
               ModeName(c.mode).c_str(), c.backend.c_str());
  if (r.has_phase1) {
    std::fprintf(out, "phase I: %.1fs random scheduling, %.0f tps, abort rate %.3f, %lld refs learned\n",
                 r.phase1.seconds, r.phase1.tps, r.phase1.abort_rate, static_cast<long long>(r.learned_refs));
  }
  if (!r.top_learned.empty()) {
    std::fprintf(out, "learned references with the most aborts (aborts / commits / fraction):\n");
    for (size_t i = 0; i < r.top_learned.size(); ++i) {
      const auto& e = r.top_learned[i];
      const double n = static_cast<double>(e.counts.aborts + e.counts.commits);
      std::string row;
      if (!r.runs.empty() && i < r.runs.back().learned_rows.size()) {
        row = r.runs.back().learned_rows[i].empty() ? "  (no State row)" : "  State row:";
        for (uint64_t v : r.runs.back().learned_rows[i]) absl::StrAppend(&row, " ", v);
      }
      std::fprintf(out, "  %-32s %9llu %9llu  %.3f%s\n",
                   e.text.empty() ? absl::StrCat("#", e.ref.value()).c_str() : e.text.c_str(),
                   (unsigned long long)e.counts.aborts, (unsigned long long)e.counts.commits,
                   n > 0 ? e.counts.aborts / n : 0.0, row.c_str());
    }
  }
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunMetrics& m = r.runs[i];
    std::fprintf(out, "run %zu: %.2fs  %.0f tps  abort rate %.4f  commits %llu  aborts %llu  user aborts %llu  failures %llu\n",
                 i + 1, m.seconds, m.tps, m.abort_rate, (unsigned long long)m.commits,
                 (unsigned long long)m.conflict_aborts, (unsigned long long)m.user_aborts,
                 (unsigned long long)m.failures);
    if (!m.plan_report.empty()) std::fprintf(out, "  %s\n", m.plan_report.c_str());
    std::string causes;
    for (size_t k = 1; k < m.aborts_by_cause.size(); ++k) {
      if (m.aborts_by_cause[k]) {
        absl::StrAppend(&causes, " ", scheduler::AbortCauseName(static_cast<scheduler::AbortCause>(k)), "=",
                        m.aborts_by_cause[k]);
      }
    }
    std::fprintf(out, "  aborts by cause:%s\n", causes.empty() ? " none" : causes.c_str());
    std::fprintf(out, "  response time (decision -> commit, retries incl.): p50 %.1f us  p95 %.1f us  p99 %.1f us  mean %.1f us\n",
                 m.p50_us, m.p95_us, m.p99_us, m.mean_us);
    std::fprintf(out,
                 "  scheduling cost: %.0f ns/txn wall (extraction %.0f ns); thread CPU %.0f ns/txn (extraction %.0f ns); "
                 "extraction cache %llu hits / %llu misses; steals %llu; clock read %.0f ns taken out per interval\n",
                 m.sched_cost_ns, m.extract_ns, m.sched_cpu_ns, m.extract_cpu_ns,
                 (unsigned long long)m.extract_cache_hits, (unsigned long long)m.extract_cache_misses,
                 (unsigned long long)m.steals, m.probe_cpu_ns);
    if (m.route_all_refs > 0) {
      std::fprintf(out, "  routing saw %.1f%% of the references touched (%llu of %llu); %llu transactions with a template prediction\n",
                   100.0 * static_cast<double>(m.route_seen_refs) / static_cast<double>(m.route_all_refs),
                   (unsigned long long)m.route_seen_refs, (unsigned long long)m.route_all_refs,
                   (unsigned long long)m.route_predicted_txns);
    }
    if (!m.worker_commits.empty()) {
      uint64_t mx = 0, sum = 0;
      std::string per;
      for (uint64_t v : m.worker_commits) {
        mx = std::max(mx, v);
        sum += v;
        absl::StrAppend(&per, " ", v);
      }
      const double mean = static_cast<double>(sum) / m.worker_commits.size();
      std::fprintf(out, "  commits per queue:%s (max/mean %.2f)\n", per.c_str(), mean > 0 ? mx / mean : 0.0);
    }
    for (const auto& t : m.per_type) {
      std::fprintf(out, "  %-14s commits %9llu  conflict aborts %8llu  user aborts %6llu\n", t.name.c_str(),
                   (unsigned long long)t.commits, (unsigned long long)t.conflict_aborts,
                   (unsigned long long)t.user_aborts);
    }
    if (m.interference.valid) {
      std::fprintf(out, "  machine: other processes %.0f%%, steal %.0f%% of its CPU in the window; load average %.2f\n",
                   100 * m.interference.other_share, 100 * m.interference.steal_share, m.interference.loadavg1);
    }
    std::fprintf(out, "  memory: history %lld refs / %lld B, state %lld refs / %lld B\n",
                 (long long)m.history_entries, (long long)m.history_bytes, (long long)m.state_entries,
                 (long long)m.state_bytes);
    if (!m.switch_log.empty()) {
      std::fprintf(out, "  auto: %zu policy switches\n", m.switch_log.size());
      for (const std::string& line : m.switch_log) std::fprintf(out, "    %s\n", line.c_str());
    }
    std::fprintf(out, "  consistency check: %s\n", m.check.ok() ? "OK" : std::string(m.check.message()).c_str());
  }
  std::fprintf(out, "mean over %d run(s): %.0f tps (+-%.0f)  abort rate %.4f (+-%.4f)  p50 %.1f us  p99 %.1f us  sched cost %.0f ns\n",
               r.tps.n, r.tps.mean, r.tps.half_width, r.abort_rate.mean, r.abort_rate.half_width, r.p50_us.mean,
               r.p99_us.mean, r.sched_cost_ns.mean);
}

std::string CsvHeader() {
  std::string h =
      "workload,protocol,policy,queues,clients,arrival_rate,mode,run,seconds,tps,abort_rate,commits,"
      "conflict_aborts,user_aborts,failures,p50_us,p95_us,p99_us,mean_us,sched_cost_ns,extract_ns,"
      "history_entries,history_bytes,state_entries,state_bytes,check_ok";
  for (size_t k = 1; k < static_cast<size_t>(scheduler::AbortCause::kCount); ++k) {
    absl::StrAppend(&h, ",aborts_", scheduler::AbortCauseName(static_cast<scheduler::AbortCause>(k)));
  }
  return h + ",sched_cpu_ns,extract_cpu_ns,extract_cache_hits,extract_cache_misses,steals,"
             "round,interference_share,steal_share,other_cpu_share,loadavg1,contaminated,queues_per_txn\n";
}

std::string CsvRows(const BenchResult& r) {
  std::string out;
  const BenchConfig& c = r.config;
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunMetrics& m = r.runs[i];
    absl::StrAppend(&out, c.workload, ",", c.protocol, ",", c.policy, ",", c.queues, ",", EffectiveClients(c), ",",
                    c.arrival_rate, ",", ModeName(c.mode), ",", i + 1, ",", absl::StrFormat("%.4f", m.seconds), ",",
                    absl::StrFormat("%.1f", m.tps), ",", absl::StrFormat("%.5f", m.abort_rate), ",", m.commits, ",",
                    m.conflict_aborts, ",", m.user_aborts, ",", m.failures, ",",
                    absl::StrFormat("%.1f,%.1f,%.1f,%.1f", m.p50_us, m.p95_us, m.p99_us, m.mean_us), ",",
                    absl::StrFormat("%.0f,%.0f", m.sched_cost_ns, m.extract_ns), ",", m.history_entries, ",",
                    m.history_bytes, ",", m.state_entries, ",", m.state_bytes, ",", m.check.ok() ? 1 : 0);
    for (size_t k = 1; k < m.aborts_by_cause.size(); ++k) absl::StrAppend(&out, ",", m.aborts_by_cause[k]);
    absl::StrAppend(&out, absl::StrFormat(",%.0f,%.0f", m.sched_cpu_ns, m.extract_cpu_ns), ",", m.extract_cache_hits,
                    ",", m.extract_cache_misses, ",", m.steals, ",", m.round, ",",
                    m.interference.valid ? absl::StrFormat("%.4f,%.4f,%.4f", m.interference.share,
                                                           m.interference.steal_share, m.interference.other_share)
                                         : std::string(",,"),
                    absl::StrFormat(",%.2f,", m.interference.loadavg1), m.contaminated ? 1 : 0,
                    absl::StrFormat(",%.3f", m.queues_per_txn), "\n");
  }
  return out;
}

std::string TimelineCsv(const BenchResult& r) {
  std::string out =
      "run,t_s,tps,abort_rate,phase,history_entries,history_bytes,state_entries,state_bytes,chosen,hot_queues,"
      "switches\n";
  for (size_t i = 0; i < r.runs.size(); ++i) {
    for (const Sample& s : r.runs[i].timeline) {
      absl::StrAppend(&out, i + 1, ",", absl::StrFormat("%.3f,%.1f,%.5f", s.t_s, s.tps, s.abort_rate), ",", s.phase,
                      ",", s.history_entries, ",", s.history_bytes, ",", s.state_entries, ",", s.state_bytes, ",",
                      s.chosen, ",", s.hot_queues, ",", s.switches, "\n");
    }
  }
  return out;
}

std::string ToJson(const BenchResult& r) {
  const BenchConfig& c = r.config;
  std::string o = "{";
  absl::StrAppend(&o, "\"workload\":", JsonStr(c.workload), ",\"protocol\":", JsonStr(c.protocol),
                  ",\"policy\":", JsonStr(c.policy), ",\"queues\":", c.queues, ",\"clients\":", EffectiveClients(c),
                  ",\"arrival_rate\":", c.arrival_rate, ",\"mode\":", JsonStr(ModeName(c.mode)),
                  ",\"backend\":", JsonStr(c.backend), ",\"learned_refs\":", r.learned_refs);
  auto ci = [](const MeanCi& m) {
    return absl::StrFormat("{\"mean\":%.6g,\"ci95\":%.6g,\"n\":%d}", m.mean, m.half_width, m.n);
  };
  absl::StrAppend(&o, ",\"tps\":", ci(r.tps), ",\"abort_rate\":", ci(r.abort_rate), ",\"p50_us\":", ci(r.p50_us),
                  ",\"p99_us\":", ci(r.p99_us), ",\"sched_cost_ns\":", ci(r.sched_cost_ns),
                  ",\"checks_ok\":", r.all_checks_ok ? "true" : "false", ",\"runs\":[");
  for (size_t i = 0; i < r.runs.size(); ++i) {
    const RunMetrics& m = r.runs[i];
    if (i) o += ",";
    absl::StrAppend(&o, absl::StrFormat("{\"seconds\":%.4f,\"tps\":%.1f,\"abort_rate\":%.5f,", m.seconds, m.tps,
                                        m.abort_rate),
                    "\"commits\":", m.commits, ",\"conflict_aborts\":", m.conflict_aborts,
                    ",\"user_aborts\":", m.user_aborts, ",\"failures\":", m.failures,
                    absl::StrFormat(",\"p50_us\":%.1f,\"p95_us\":%.1f,\"p99_us\":%.1f,\"sched_cost_ns\":%.0f",
                                    m.p50_us, m.p95_us, m.p99_us, m.sched_cost_ns),
                    ",\"aborts_by_cause\":{");
    bool first = true;
    for (size_t k = 1; k < m.aborts_by_cause.size(); ++k) {
      if (!first) o += ",";
      first = false;
      absl::StrAppend(&o, JsonStr(scheduler::AbortCauseName(static_cast<scheduler::AbortCause>(k))), ":",
                      m.aborts_by_cause[k]);
    }
    o += "},\"per_type\":{";
    for (size_t t = 0; t < m.per_type.size(); ++t) {
      if (t) o += ",";
      absl::StrAppend(&o, JsonStr(m.per_type[t].name), ":{\"commits\":", m.per_type[t].commits,
                      ",\"conflict_aborts\":", m.per_type[t].conflict_aborts,
                      ",\"user_aborts\":", m.per_type[t].user_aborts, "}");
    }
    absl::StrAppend(&o, "},\"check\":", JsonStr(m.check.ok() ? "OK" : std::string(m.check.message())), "}");
  }
  o += "]}\n";
  return o;
}

}  // namespace bench
}  // namespace corral
