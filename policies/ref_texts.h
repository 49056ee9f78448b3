// Where the extractor writes references' display texts ("w_id=5",
// "i_id=2 AND w_id=5"): RefTexts, one reusable buffer for a transaction's
// texts, or a plain std::vector<std::string>; TextSink names either (or none).
//
// A text is wanted only when its reference is new to the History (to name it
// in admin displays), which a router learns after the transaction. Kept as
// one std::string per reference, every statement allocated its texts and
// every transaction freed them (a sixth of the proxy's own CPU per pgbench -S
// read); RefTexts keeps its capacity across clear(), so once warm it
// allocates nothing.
//
//   RefTexts t;
//   extractor.Extract(sql, policy, params, &ids, &mult, &t);   // or &vector
//   absl::string_view first = t[0];
//   t.clear();                      // keeps the buffer for the next one
//
// Thread safety: none; a RefTexts belongs to one transaction at a time.
#ifndef CORRAL_POLICIES_REF_TEXTS_H_
#define CORRAL_POLICIES_REF_TEXTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace corral {

class RefTexts {
 public:
  size_t size() const { return ends_.size(); }
  bool empty() const { return ends_.empty(); }
  absl::string_view operator[](size_t i) const {
    const size_t b = i == 0 ? 0 : ends_[i - 1];
    return absl::string_view(buf_).substr(b, ends_[i] - b);
  }
  // Forgets the texts, keeps the memory.
  void clear() {
    buf_.clear();
    ends_.clear();
  }
  // A text built in pieces: Append ... then End.
  void Append(absl::string_view piece) { buf_.append(piece.data(), piece.size()); }
  void End() { ends_.push_back(static_cast<uint32_t>(buf_.size())); }
  std::vector<std::string> ToVector() const {
    std::vector<std::string> v;
    v.reserve(size());
    for (size_t i = 0; i < size(); ++i) v.emplace_back((*this)[i]);
    return v;
  }

 private:
  std::string buf_;
  absl::InlinedVector<uint32_t, 16> ends_;
};

// A non-owning destination for texts: a RefTexts, a vector of strings, or
// nothing (null: texts are not made). Converts implicitly from either pointer.
class TextSink {
 public:
  TextSink() = default;
  TextSink(std::nullptr_t) {}                             // NOLINT: implicit by design
  TextSink(RefTexts* texts) : buf_(texts) {}              // NOLINT
  TextSink(std::vector<std::string>* texts) : vec_(texts) {}  // NOLINT

  explicit operator bool() const { return buf_ != nullptr || vec_ != nullptr; }

  // One text in pieces: Begin, Append..., End.
  void Begin() {
    if (vec_ != nullptr) vec_->emplace_back();
  }
  void Append(absl::string_view piece) {
    if (buf_ != nullptr) {
      buf_->Append(piece);
    } else if (vec_ != nullptr) {
      vec_->back().append(piece.data(), piece.size());
    }
  }
  void End() {
    if (buf_ != nullptr) buf_->End();
  }
  // `name` "=" `value` as one text.
  void Add(absl::string_view name, absl::string_view value) {
    Begin();
    if (vec_ != nullptr) vec_->back().reserve(name.size() + 1 + value.size());
    Append(name);
    Append("=");
    Append(value);
    End();
  }

 private:
  RefTexts* buf_ = nullptr;
  std::vector<std::string>* vec_ = nullptr;
};

}  // namespace corral

#endif  // CORRAL_POLICIES_REF_TEXTS_H_
