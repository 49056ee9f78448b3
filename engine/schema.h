// Fixed row schemas and typed row views for the embedded engine.
//
// A table's rows all have the same byte size. A Schema lists typed columns
// (int64, double, fixed-capacity string) and assigns each a byte offset; a
// row is a plain byte buffer of Schema::row_size() bytes (a multiple of 8).
// ConstRow / Row are cheap views (schema pointer + data pointer) with typed
// getters/setters; they never allocate. Strings are stored as a 2-byte length
// followed by `capacity` bytes, so GetString returns an absl::string_view into
// the row (valid as long as the view is).
//
// Keys: every index is keyed by a uint64_t. Workloads pack composite keys
// (w_id, d_id, o_id, ...) with KeyPacker, most significant field first, so
// that ordered-index order equals lexicographic field order.
//
//   Schema s;
//   int c_id = s.AddInt64("c_id");
//   int c_balance = s.AddDouble("c_balance");
//   int c_last = s.AddString("c_last", 16);
//   ...
//   Row r = ...;                    // obtained from Tx::Insert / ReadForUpdate
//   r.SetInt(c_id, 7);
//   r.SetString(c_last, "BARBARBAR");
//   double b = r.GetDouble(c_balance);
//
//   uint64_t k = KeyPacker().Add(w, 16).Add(d, 8).Add(c, 24).key();
//
// Thread-safety: a Schema is immutable once its table is created (read from
// any thread). Views are thread-compatible; the data they point at is
// protected by the transaction that produced them (see txn_api.h).
#ifndef CORRAL_ENGINE_SCHEMA_H_
#define CORRAL_ENGINE_SCHEMA_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace corral {
namespace engine {

enum class ColumnType : uint8_t { kInt64, kDouble, kString };

struct Column {
  std::string name;
  ColumnType type;
  uint32_t offset;    // byte offset in the row
  uint32_t capacity;  // kString: max bytes; otherwise 8
};

// Column layout of one table. Thread-compatible while being built; immutable
// (and safe to share) once handed to Database::CreateTable.
class Schema {
 public:
  // Each Add* returns the column's index (use it with the row accessors).
  int AddInt64(absl::string_view name);
  int AddDouble(absl::string_view name);
  // A string column holding at most `capacity` bytes (1..65535).
  int AddString(absl::string_view name, uint32_t capacity);

  // Index of a named column, or -1.
  int Find(absl::string_view name) const;
  size_t num_columns() const { return columns_.size(); }
  const Column& column(int i) const { return columns_[i]; }
  // Bytes per row: a multiple of 8, at least 8.
  uint32_t row_size() const { return row_size_ < 8 ? 8 : row_size_; }

 private:
  int Add(absl::string_view name, ColumnType t, uint32_t bytes, uint32_t capacity);
  std::vector<Column> columns_;
  uint32_t row_size_ = 0;
};

// A read-only view of one row. `key()` is the row's primary key.
class ConstRow {
 public:
  ConstRow() = default;
  ConstRow(const Schema* s, const char* data, uint64_t key)
      : schema_(s), data_(const_cast<char*>(data)), key_(key) {}

  bool valid() const { return data_ != nullptr; }
  uint64_t key() const { return key_; }
  const Schema& schema() const { return *schema_; }
  const char* data() const { return data_; }

  int64_t GetInt(int col) const {
    int64_t v;
    std::memcpy(&v, data_ + schema_->column(col).offset, 8);
    return v;
  }
  double GetDouble(int col) const {
    double v;
    std::memcpy(&v, data_ + schema_->column(col).offset, 8);
    return v;
  }
  absl::string_view GetString(int col) const {
    const char* p = data_ + schema_->column(col).offset;
    uint16_t n;
    std::memcpy(&n, p, 2);
    return absl::string_view(p + 2, n);
  }

 protected:
  const Schema* schema_ = nullptr;
  char* data_ = nullptr;
  uint64_t key_ = 0;
};

// A writable view. Writes through a Row obtained from a transaction are part
// of that transaction (installed at commit, undone on abort).
class Row : public ConstRow {
 public:
  Row() = default;
  Row(const Schema* s, char* data, uint64_t key) : ConstRow(s, data, key) {}
  char* mutable_data() const { return data_; }

  void SetInt(int col, int64_t v) const {
    std::memcpy(data_ + schema_->column(col).offset, &v, 8);
  }
  void SetDouble(int col, double v) const {
    std::memcpy(data_ + schema_->column(col).offset, &v, 8);
  }
  // Truncates to the column's capacity.
  void SetString(int col, absl::string_view v) const {
    const Column& c = schema_->column(col);
    uint16_t n = static_cast<uint16_t>(v.size() < c.capacity ? v.size() : c.capacity);
    char* p = data_ + c.offset;
    std::memcpy(p, &n, 2);
    if (n > 0) std::memcpy(p + 2, v.data(), n);
  }
  void AddInt(int col, int64_t d) const { SetInt(col, GetInt(col) + d); }
  void AddDouble(int col, double d) const { SetDouble(col, GetDouble(col) + d); }
  // Copies all column values from `other` (same schema).
  void CopyFrom(const ConstRow& other) const {
    std::memcpy(data_, other.data(), schema_->row_size());
  }
};

// Packs fields into a uint64_t key, most significant first. The caller picks
// bit widths that hold its value ranges (total <= 64); values are masked.
//
//   KeyPacker().Add(w_id, 16).Add(d_id, 8).Add(o_id, 32).key()
class KeyPacker {
 public:
  KeyPacker& Add(uint64_t v, int bits) {
    key_ = (bits >= 64 ? 0 : key_ << bits) | (bits >= 64 ? v : (v & ((uint64_t{1} << bits) - 1)));
    return *this;
  }
  uint64_t key() const { return key_; }

 private:
  uint64_t key_ = 0;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_SCHEMA_H_
