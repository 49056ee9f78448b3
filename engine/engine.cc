#include "engine/engine.h"

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/cc.h"

namespace corral {
namespace engine {

const std::vector<std::string>& ProtocolNames() {
  static const auto* names =
      new std::vector<std::string>{"occ",       "2pl-nowait", "2pl-waitdie", "2pl-dldetect",
                                   "timestamp", "mvcc",       "maat",        "calvin",
                                   "planned",   "qstore",    "orthrus"};
  return *names;
}

uint64_t ExecutorStats::total_conflicts() const {
  uint64_t n = 0;
  for (uint64_t c : conflicts) n += c;
  return n;
}

Database::Database(std::string protocol) : protocol_name_(std::move(protocol)) {}
Database::~Database() = default;

absl::StatusOr<std::unique_ptr<Database>> Database::Create(const DatabaseOptions& options) {
  auto cc = CcProtocol::Create(options.protocol, options);
  if (!cc.ok()) return cc.status();
  std::unique_ptr<Database> db(new Database(options.protocol));
  db->cc_ = std::move(cc).value();
  return db;
}

absl::StatusOr<Table*> Database::CreateTable(absl::string_view name, const Schema& schema,
                                             const TableOptions& options) {
  if (name.empty()) return absl::InvalidArgumentError("table name is empty");
  if (FindTable(name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("table '", name, "' exists"));
  }
  if (schema.num_columns() == 0) {
    return absl::InvalidArgumentError(absl::StrCat("table '", name, "' has no columns"));
  }
  tables_.push_back(std::make_unique<Table>(static_cast<int>(tables_.size()), std::string(name),
                                            schema, options));
  return tables_.back().get();
}

absl::StatusOr<OrderedIndex*> Database::CreateIndex(Table* table, absl::string_view name,
                                                    OrderedIndex::KeyFn key_of) {
  if (table == nullptr || !key_of) return absl::InvalidArgumentError("null table or key function");
  if (table->CountPresent() != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("create index '", name, "' before loading table '", table->name(), "'"));
  }
  return table->AddOrderedIndex(std::string(name), std::move(key_of));
}

Table* Database::FindTable(absl::string_view name) const {
  for (const auto& t : tables_) {
    if (absl::string_view(t->name()) == name) return t.get();
  }
  return nullptr;
}

absl::Status Database::SetLockGranule(Table* table, int low_bits) {
  if (table == nullptr) return absl::InvalidArgumentError("null table");
  if (low_bits < 0 || low_bits > 64) {
    return absl::InvalidArgumentError(absl::StrCat("lock granule of ", table->name(), ": ",
                                                   low_bits, " low bits is not in [0, 64]"));
  }
  table->set_granule_bits(low_bits);
  return absl::OkStatus();
}

absl::Status Database::Load(Table* table, uint64_t key, absl::FunctionRef<void(const Row&)> fill) {
  if (table == nullptr) return absl::InvalidArgumentError("null table");
  if (table->Find(key) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("key ", key, " exists in ", table->name()));
  }
  Record* rec = load_arena_.Allocate(table->row_size());
  rec->key = key;
  rec->table = table;
  fill(Row(&table->schema(), rec->data(), key));
  rec->tid.store(1, std::memory_order_release);
  table->InsertHash(rec);
  table->InsertOrdered(rec);
  return absl::OkStatus();
}

absl::Status Database::Peek(const Table* table, uint64_t key, ConstRow* out) const {
  Record* rec = table->Find(key);
  if (rec == nullptr || (rec->tid.load(std::memory_order_acquire) & kTidAbsentBit)) {
    return absl::NotFoundError(absl::StrCat("key ", key, " not in ", table->name()));
  }
  *out = ConstRow(&table->schema(), rec->data(), key);
  return absl::OkStatus();
}

std::string Database::ProtocolReport() const { return cc_->Report(); }

absl::StatusOr<std::unique_ptr<EngineExecutor>> Database::NewExecutor(
    int worker_id, const ExecutorOptions& options) {
  if (worker_id < 0 || worker_id >= kMaxWorkers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker id ", worker_id, " out of range [0, ", kMaxWorkers, ")"));
  }
  RecordArena* arena;
  {
    WriteGuard l(&mu_);
    if (arenas_.size() <= static_cast<size_t>(worker_id)) arenas_.resize(worker_id + 1);
    if (!arenas_[worker_id]) arenas_[worker_id] = std::make_unique<RecordArena>();
    arena = arenas_[worker_id].get();
    if (!tables_announced_) {
      tables_announced_ = true;
      cc_->TablesLoaded(tables_);
    }
  }
  return std::unique_ptr<EngineExecutor>(new EngineExecutor(
      this, worker_id, options, cc_->NewTx(worker_id, arena, options.record_footprint)));
}

EngineExecutor::EngineExecutor(Database* db, int worker_id, const ExecutorOptions& options,
                               std::unique_ptr<TxImpl> tx)
    : db_(db), worker_id_(worker_id), options_(options), tx_(std::move(tx)) {}

EngineExecutor::~EngineExecutor() = default;

const Footprint& EngineExecutor::last_footprint() const { return tx_->footprint(); }

scheduler::ExecResult EngineExecutor::Execute(scheduler::Txn& txn) {
  auto& p = static_cast<ProcedureTxn&>(txn);
  return Run([&p](Tx& tx) { return p.Run(tx); }, &p.engine_ts, txn.attempts, &p);
}

scheduler::ExecResult EngineExecutor::Run(absl::FunctionRef<absl::Status(Tx&)> proc,
                                          uint64_t* ts_slot, int attempts,
                                          const ProcedureTxn* declarer) {
  uint64_t ts = ts_slot != nullptr ? *ts_slot : 0;
  if (ts == 0) {
    // Clock ns with the worker slot in the low bits: unique, roughly ordered
    // by start time, no shared counter.
    uint64_t ns = static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
    ts = (ns << 6) | static_cast<uint64_t>(worker_id_ + 1);
    if (ts_slot != nullptr) *ts_slot = ts;
  }
  if (PlannedRunner* planned = tx_->planned()) {
    return planned->RunPlanned(proc, declarer, ts, options_.txn_delay_ns, &stats_);
  }
  tx_->Begin(ts);
  absl::Status s = proc(*tx_);
  if (tx_->conflicted()) {
    tx_->Abort();
    scheduler::AbortCause c = tx_->cause();
    ++stats_.conflicts[static_cast<size_t>(c)];
    Backoff(attempts);
    return scheduler::ExecResult::Conflict(c);
  }
  if (!s.ok() && !tx_->ReadsStillValid()) {
    const scheduler::AbortCause stale = tx_->StaleReadCause();
    tx_->Abort();
    ++stats_.conflicts[static_cast<size_t>(stale)];
    Backoff(attempts);
    return scheduler::ExecResult::Conflict(stale);
  }
  if (!s.ok()) {
    tx_->Abort();
    if (IsUserAbort(s)) {
      ++stats_.user_aborts;
      return scheduler::ExecResult::UserAbort(std::move(s));
    }
    ++stats_.failed;
    return scheduler::ExecResult::Failed(std::move(s));
  }
  if (options_.txn_delay_ns > 0) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(options_.txn_delay_ns));
  }
  scheduler::AbortCause c = tx_->Commit();
  if (c != scheduler::AbortCause::kNone) {
    ++stats_.conflicts[static_cast<size_t>(c)];
    Backoff(attempts);
    return scheduler::ExecResult::Conflict(c);
  }
  ++stats_.commits;
  return scheduler::ExecResult::Commit();
}

void EngineExecutor::Backoff(int attempts) {
  if (options_.obstacle_wait_ns > 0) {
    int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
    tx_->WaitForObstacle(now + options_.obstacle_wait_ns);
  }
  if (options_.backoff_ns <= 0) return;
  int shift = attempts < 1 ? 0 : (attempts - 1 > 10 ? 10 : attempts - 1);
  int64_t ns = options_.backoff_ns << shift;
  if (ns > options_.max_backoff_ns) ns = options_.max_backoff_ns;
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
}

}  // namespace engine
}  // namespace corral
