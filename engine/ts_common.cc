#include "engine/ts_common.h"

#include <cstdlib>
#include <new>

namespace corral {
namespace engine {

MetaPool::~MetaPool() {
  for (auto& v : owned_) {
    for (TsMeta* m : v) {
      FreeChain(m->chain);
      delete m;
    }
  }
}

Version* MetaPool::NewVersion(const Record* rec) {
  uint64_t tid = rec->tid.load(std::memory_order_relaxed);
  bool absent = (tid & kTidAbsentBit) != 0;
  size_t n = absent ? 0 : rec->table->row_size();
  void* p = std::malloc(sizeof(Version) + n);
  if (p == nullptr) throw std::bad_alloc();
  Version* v = new (p) Version;
  v->older = nullptr;
  v->wts = tid & kTidVersionMask;
  v->absent = absent;
  if (!absent) std::memcpy(v->data, rec->data(), n);
  live_versions_.fetch_add(1, std::memory_order_relaxed);
  return v;
}

void MetaPool::FreeChain(Version* v) {
  while (v != nullptr) {
    Version* older = v->older;
    std::free(v);
    live_versions_.fetch_sub(1, std::memory_order_relaxed);
    v = older;
  }
}

namespace {

absl::Status StatusOf(Got g) {
  switch (g) {
    case Got::kRow:
      return absl::OkStatus();
    case Got::kAbsent:
      return NotFoundStatus();
    case Got::kConflict:
      break;
  }
  return ConflictStatus();
}

}  // namespace

absl::Status TsTxBase::Read(const Table* table, uint64_t key, ConstRow* out) {
  if (Stopped()) return ConflictStatus();
  Record* rec = table->Find(key);
  if (rec == nullptr) return NotFoundStatus();
  Row own;
  absl::Status st;
  if (ReadOwn(table, rec, &own, &st)) {
    *out = own;
    return st;
  }
  char* buf = scratch_.Allocate(table->row_size());
  Got g = ReadRow(rec, buf);
  if (g == Got::kRow) *out = ConstRow(&table->schema(), buf, key);
  return StatusOf(g);
}

absl::Status TsTxBase::ReadForUpdate(const Table* table, uint64_t key, Row* out) {
  if (Stopped()) return ConflictStatus();
  Record* rec = table->Find(key);
  if (rec == nullptr) return NotFoundStatus();
  absl::Status st;
  if (ReadOwn(table, rec, out, &st)) return st;
  char* buf = scratch_.Allocate(table->row_size());
  Got g = WriteRow(rec, buf);
  if (g == Got::kRow) {
    writes_.push_back({rec, buf, WKind::kUpdate});
    *out = Row(&table->schema(), buf, key);
  }
  return StatusOf(g);
}

absl::Status TsTxBase::Insert(const Table* table, uint64_t key, Row* out) {
  if (Stopped()) return ConflictStatus();
  Table* t = const_cast<Table*>(table);
  Record* rec = arena_->Allocate(t->row_size());
  rec->key = key;
  rec->table = t;
  rec->tid.store(kTidAbsentBit, std::memory_order_relaxed);
  ClaimNew(pool_->MetaOf(rec, worker_id_));
  Record* existing = t->InsertHash(rec);
  if (existing != nullptr) {
    // Our fresh record stays unused in the arena.
    if (FindWrite(existing) != nullptr) return Fail(OwnCause());
    char* buf = scratch_.Allocate(t->row_size());
    switch (ReadRow(existing, buf)) {
      case Got::kRow:
        return ExistsStatus();
      case Got::kAbsent:
        // Absent but indexed: an insert in flight or a delete being
        // applied. The executor waits for it to resolve before the retry.
        SetInFlightObstacle(existing);
        return Fail(OwnCause());
      case Got::kConflict:
        break;
    }
    return ConflictStatus();
  }
  writes_.push_back({rec, rec->data(), WKind::kInsert});
  *out = Row(&t->schema(), rec->data(), key);
  return absl::OkStatus();
}

absl::Status TsTxBase::Delete(const Table* table, uint64_t key) {
  if (Stopped()) return ConflictStatus();
  Record* rec = table->Find(key);
  if (rec == nullptr) return NotFoundStatus();
  if (WriteEntry* w = FindWrite(rec)) {
    if (Deleted(*w)) return NotFoundStatus();
    w->kind = w->kind == WKind::kInsert ? WKind::kInsertDeleted : WKind::kDelete;
    return absl::OkStatus();
  }
  Got g = WriteRow(rec, nullptr);
  if (g == Got::kRow) writes_.push_back({rec, nullptr, WKind::kDelete});
  return StatusOf(g);
}

absl::Status TsTxBase::Scan(const ScanSpec& spec, std::vector<ConstRow>* out) {
  if (Doomed()) return ConflictStatus();
  const Table* table = spec.index->table();
  const Schema* schema = &table->schema();
  return ScanBatches(spec, out, [&](const OrderedIndex::Entry& e) {
    Record* rec = e.rec;
    Row row;
    absl::Status st;
    if (ReadOwn(table, rec, &row, &st)) {
      if (st.ok()) out->push_back(row);
      return absl::OkStatus();
    }
    char* buf = scratch_.Allocate(table->row_size());
    Got g = ReadRow(rec, buf);
    if (g == Got::kRow) out->push_back(ConstRow(schema, buf, rec->key));
    return g == Got::kConflict ? ConflictStatus() : absl::OkStatus();  // absent: skipped
  });
}

bool TsTxBase::ReadOwn(const Table* table, Record* rec, Row* row, absl::Status* st) {
  WriteEntry* w = FindWrite(rec);
  if (w == nullptr) return false;
  if (Deleted(*w)) {
    *st = NotFoundStatus();
  } else {
    *row = Row(&table->schema(), w->data, rec->key);
    *st = absl::OkStatus();
  }
  return true;
}

void TsTxBase::Install(const WriteEntry& w, uint64_t ts) {
  Record* rec = w.rec;
  switch (w.kind) {
    case WKind::kUpdate:
      std::memcpy(rec->data(), w.data, rec->table->row_size());
      rec->tid.store(ts, std::memory_order_release);
      break;
    case WKind::kInsert:
      rec->tid.store(ts, std::memory_order_release);
      break;
    case WKind::kDelete:
      rec->tid.store(ts | kTidAbsentBit, std::memory_order_release);
      break;
    case WKind::kInsertDeleted:
      break;  // stays absent
  }
}

void TsTxBase::Unindex(const WriteEntry& w) {
  if (w.kind == WKind::kDelete) {
    w.rec->table->EraseOrdered(w.rec);
    w.rec->table->EraseHash(w.rec);
  } else if (w.kind == WKind::kInsertDeleted) {
    w.rec->table->EraseHash(w.rec);
  }
}

void TsTxBase::IndexInserts() {
  for (const WriteEntry& w : writes_) {
    if (w.kind == WKind::kInsert) w.rec->table->InsertOrdered(w.rec);
  }
}

void TsTxBase::UnlinkInserts() {
  for (const WriteEntry& w : writes_) {
    if (w.kind == WKind::kInsert || w.kind == WKind::kInsertDeleted) {
      w.rec->table->EraseHash(w.rec);  // stays absent
    }
  }
}

void TsTxBase::RecordWrites(uint64_t ts) {
  if (!record_footprint_) return;
  for (const WriteEntry& w : writes_) {
    if (w.kind != WKind::kInsertDeleted) {
      footprint_.writes.push_back({w.rec->table->id(), w.rec->key, ts});
    }
  }
}

}  // namespace engine
}  // namespace corral
