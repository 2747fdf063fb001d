#include "common/json_util.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace topogang {

namespace {

// Deeper nesting is refused before nlohmann builds anything. ordered_json copies an object's
// members when the object grows (its pairs have const keys, so they are not moved), one recursion
// per level of a member's nesting: {"a":[[[...]]],"b":1} about 50,000 deep overflowed an 8 MB
// thread stack, so a 100 KB request body took the daemon down. simdjson's limit is the same.
constexpr int kMaxJsonDepth = 1024;

// Whether the nesting of `text` goes deeper than kMaxJsonDepth; brackets inside strings do not
// count. Up to the first syntax error this is the parser's own depth; past it the text is refused
// either way (perhaps for depth rather than for that error).
bool TooDeep(absl::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<Json> ParseJson(absl::string_view text) {
  if (TooDeep(text)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid JSON: nesting deeper than ", kMaxJsonDepth, " levels"));
  }
  Json j = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    // Re-parse with exceptions only to get a position for the message (rare path).
    try {
      Json ignored = Json::parse(text.begin(), text.end());
      (void)ignored;
    } catch (const Json::exception& e) {
      // nlohmann quotes the bytes it last read, which need not be UTF-8, and the message goes
      // into replies (a filter's Error): keep it ASCII.
      std::string what = e.what();
      for (char& c : what) {
        if (static_cast<unsigned char>(c) >= 0x80) c = '?';
      }
      return absl::InvalidArgumentError(absl::StrCat("invalid JSON: ", what));
    }
    return absl::InvalidArgumentError("invalid JSON");
  }
  return j;
}

const Json* GoField(const Json& obj, absl::string_view key) {
  if (!obj.is_object()) return nullptr;
  const Json* folded = nullptr;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& k = it.key();
    if (k.size() != key.size()) continue;
    if (k == key) return it->is_null() ? nullptr : &*it;
    if (folded == nullptr && absl::EqualsIgnoreCase(k, key)) folded = &*it;
  }
  return folded != nullptr && folded->is_null() ? nullptr : folded;
}

namespace {
absl::Status WrongType(absl::string_view what, absl::string_view want, const Json& got) {
  return absl::InvalidArgumentError(
      absl::StrCat(what, ": expected ", want, ", got ", got.type_name()));
}
}  // namespace

absl::StatusOr<std::string> JsonString(const Json& obj, absl::string_view key,
                                       absl::string_view what) {
  const Json* v = GoField(obj, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return WrongType(what, "a string", *v);
  return v->get<std::string>();
}

absl::StatusOr<bool> JsonBool(const Json& obj, absl::string_view key, absl::string_view what) {
  const Json* v = GoField(obj, key);
  if (v == nullptr) return false;
  if (!v->is_boolean()) return WrongType(what, "a boolean", *v);
  return v->get<bool>();
}

absl::StatusOr<int64_t> JsonInt(const Json& obj, absl::string_view key, absl::string_view what) {
  const Json* v = GoField(obj, key);
  if (v == nullptr) return int64_t{0};
  if (v->is_number_integer() && !v->is_number_unsigned()) return v->get<int64_t>();
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": integer out of range"));
    }
    return static_cast<int64_t>(u);
  }
  return WrongType(what, "an integer", *v);
}

absl::StatusOr<const Json*> JsonObject(const Json& obj, absl::string_view key,
                                       absl::string_view what) {
  const Json* v = GoField(obj, key);
  if (v != nullptr && !v->is_object()) return WrongType(what, "an object", *v);
  return v;
}

absl::StatusOr<const Json*> JsonArray(const Json& obj, absl::string_view key,
                                      absl::string_view what) {
  const Json* v = GoField(obj, key);
  if (v != nullptr && !v->is_array()) return WrongType(what, "an array", *v);
  return v;
}

std::string DumpJson(const Json& j) {
  // Replace invalid UTF-8 instead of throwing: names come from outside.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (a lead byte >= 0x80), 0 when it is not one:
// a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short (text
// truncated by bytes). RFC 3629, section 4.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto at = [&](size_t k) -> int {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1;
  };
  const int c = at(0);
  auto cont = [&](size_t k, int lo = 0x80, int hi = 0xBF) {
    const int b = at(k);
    return b >= lo && b <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

}  // namespace

// Bytes that are not UTF-8 become \ufffd, as Go's encoding/json writes them: the reply stays
// JSON however a message was cut or whatever bytes a peer sent.
void AppendJsonString(std::string* out, absl::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending run of characters that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (const size_t n = Utf8SequenceLength(s, i); n > 0) {
        i += n - 1;
        continue;
      }
      out->append(s.data() + run, i - run);
      run = i + 1;
      out->append("\\ufffd");
      continue;
    }
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

}  // namespace topogang
