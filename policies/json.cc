#include "policies/json.h"

#include <cctype>
#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace corral {

const Json* Json::Get(absl::string_view key) const {
  if (type_ != Type::kObject) return nullptr;
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return &values_[i];
  }
  return nullptr;
}

absl::string_view Json::NodeType() const {
  if (type_ != Type::kObject || keys_.size() != 1) return "";
  return keys_[0];
}

const Json* Json::NodeBody() const {
  if (type_ != Type::kObject || keys_.size() != 1) return nullptr;
  return &values_[0];
}

class JsonParser {
 public:
  explicit JsonParser(absl::string_view s) : s_(s) {}

  absl::Status Parse(Json* out) {
    absl::Status st = Value(out, 0);
    if (!st.ok()) return st;
    Ws();
    if (p_ != s_.size()) return Err("trailing characters");
    return absl::OkStatus();
  }

 private:
  absl::Status Err(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("json: ", what, " at offset ", p_));
  }
  void Ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
  }
  bool Lit(absl::string_view w) {
    if (s_.substr(p_, w.size()) == w) {
      p_ += w.size();
      return true;
    }
    return false;
  }

  static void AppendUtf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  absl::Status String(std::string* out) {
    if (p_ >= s_.size() || s_[p_] != '"') return Err("expected string");
    ++p_;
    while (p_ < s_.size()) {
      char c = s_[p_++];
      if (c == '"') return absl::OkStatus();
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (p_ >= s_.size()) break;
      char e = s_[p_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          if (p_ + 4 > s_.size()) return Err("bad \\u escape");
          std::string hex(s_.substr(p_, 4));
          char* end = nullptr;
          uint32_t cp = static_cast<uint32_t>(std::strtoul(hex.c_str(), &end, 16));
          if (end != hex.c_str() + 4) return Err("bad \\u escape");
          p_ += 4;
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Err("bad escape");
      }
    }
    return Err("unterminated string");
  }

  absl::Status Value(Json* out, int depth) {
    if (depth > kMaxJsonDepth) {
      return absl::ResourceExhaustedError(absl::StrCat("json: nesting deeper than ", kMaxJsonDepth, " at offset ", p_));
    }
    Ws();
    if (p_ >= s_.size()) return Err("unexpected end");
    char c = s_[p_];
    if (c == '{') {
      ++p_;
      out->type_ = Json::Type::kObject;
      Ws();
      if (p_ < s_.size() && s_[p_] == '}') {
        ++p_;
        return absl::OkStatus();
      }
      while (true) {
        Ws();
        out->keys_.emplace_back();
        absl::Status st = String(&out->keys_.back());
        if (!st.ok()) return st;
        Ws();
        if (p_ >= s_.size() || s_[p_] != ':') return Err("expected ':'");
        ++p_;
        out->values_.emplace_back();
        st = Value(&out->values_.back(), depth + 1);
        if (!st.ok()) return st;
        Ws();
        if (p_ < s_.size() && s_[p_] == ',') {
          ++p_;
          continue;
        }
        if (p_ < s_.size() && s_[p_] == '}') {
          ++p_;
          return absl::OkStatus();
        }
        return Err("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++p_;
      out->type_ = Json::Type::kArray;
      Ws();
      if (p_ < s_.size() && s_[p_] == ']') {
        ++p_;
        return absl::OkStatus();
      }
      while (true) {
        out->values_.emplace_back();
        absl::Status st = Value(&out->values_.back(), depth + 1);
        if (!st.ok()) return st;
        Ws();
        if (p_ < s_.size() && s_[p_] == ',') {
          ++p_;
          continue;
        }
        if (p_ < s_.size() && s_[p_] == ']') {
          ++p_;
          return absl::OkStatus();
        }
        return Err("expected ',' or ']'");
      }
    }
    if (c == '"') {
      out->type_ = Json::Type::kString;
      return String(&out->str_);
    }
    if (Lit("true")) {
      out->type_ = Json::Type::kBool;
      out->bool_ = true;
      return absl::OkStatus();
    }
    if (Lit("false")) {
      out->type_ = Json::Type::kBool;
      return absl::OkStatus();
    }
    if (Lit("null")) return absl::OkStatus();
    size_t start = p_;
    while (p_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p_])) || s_[p_] == '-' ||
                              s_[p_] == '+' || s_[p_] == '.' || s_[p_] == 'e' || s_[p_] == 'E')) {
      ++p_;
    }
    if (p_ == start) return Err("unexpected character");
    out->type_ = Json::Type::kNumber;
    out->str_ = std::string(s_.substr(start, p_ - start));
    return absl::OkStatus();
  }

  absl::string_view s_;
  size_t p_ = 0;
};

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  Json j;
  JsonParser p(text);
  absl::Status st = p.Parse(&j);
  if (!st.ok()) return st;
  return j;
}

}  // namespace corral
