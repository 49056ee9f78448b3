#include "engine/schema.h"

namespace corral {
namespace engine {

int Schema::Add(absl::string_view name, ColumnType t, uint32_t bytes, uint32_t capacity) {
  Column c;
  c.name = std::string(name);
  c.type = t;
  c.offset = row_size_;
  c.capacity = capacity;
  row_size_ += (bytes + 7) / 8 * 8;
  columns_.push_back(std::move(c));
  return static_cast<int>(columns_.size()) - 1;
}

int Schema::AddInt64(absl::string_view name) { return Add(name, ColumnType::kInt64, 8, 8); }
int Schema::AddDouble(absl::string_view name) { return Add(name, ColumnType::kDouble, 8, 8); }
int Schema::AddString(absl::string_view name, uint32_t capacity) {
  if (capacity == 0) capacity = 1;
  if (capacity > 65535) capacity = 65535;
  return Add(name, ColumnType::kString, capacity + 2, capacity);
}

int Schema::Find(absl::string_view name) const {
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (absl::string_view(columns_[i].name) == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace engine
}  // namespace corral
