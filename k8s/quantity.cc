#include "k8s/quantity.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace topogang {
namespace {

absl::Status Bad(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("quantity \"", text.substr(0, 64), "\": ", why));
}

}  // namespace

absl::StatusOr<int64_t> ParseIntegerQuantity(absl::string_view text) {
  absl::string_view s = text;
  if (s.empty()) return Bad(text, "empty");
  if (s.size() > 64) return Bad(text, "too long");
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  std::string digits;  // integer and fraction digits, leading zeros dropped
  int frac_digits = 0;
  bool seen_digit = false, seen_dot = false;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (absl::ascii_isdigit(c)) {
      seen_digit = true;
      if (seen_dot) ++frac_digits;
      if (!(digits.empty() && c == '0'))
        digits.push_back(c);
      else if (seen_dot)
        digits.push_back(c);  // keep zeros after the dot for the scale
    } else if (c == '.' && !seen_dot) {
      seen_dot = true;
    } else {
      break;
    }
  }
  if (!seen_digit) return Bad(text, "no digits");
  // Drop leading zeros that came from the fraction part ("0.05" -> "05" -> "5").
  size_t nz = digits.find_first_not_of('0');
  digits = nz == std::string::npos ? "" : digits.substr(nz);
  absl::string_view suffix = s.substr(i);
  int exp10 = -frac_digits;
  int exp2 = 0;
  if (suffix.empty()) {
  } else if (suffix == "Ki")
    exp2 = 10;
  else if (suffix == "Mi")
    exp2 = 20;
  else if (suffix == "Gi")
    exp2 = 30;
  else if (suffix == "Ti")
    exp2 = 40;
  else if (suffix == "Pi")
    exp2 = 50;
  else if (suffix == "Ei")
    exp2 = 60;
  else if (suffix == "n")
    exp10 -= 9;
  else if (suffix == "u")
    exp10 -= 6;
  else if (suffix == "m")
    exp10 -= 3;
  else if (suffix == "k")
    exp10 += 3;
  else if (suffix == "M")
    exp10 += 6;
  else if (suffix == "G")
    exp10 += 9;
  else if (suffix == "T")
    exp10 += 12;
  else if (suffix == "P")
    exp10 += 15;
  else if (suffix == "E")
    exp10 += 18;
  else if (suffix[0] == 'e' || suffix[0] == 'E') {
    absl::string_view e = suffix.substr(1);
    int v = 0;
    if (e.empty() || e.size() > 4 || !(absl::ascii_isdigit(e[0]) || e[0] == '-' || e[0] == '+') ||
        !absl::SimpleAtoi(e, &v)) {
      return Bad(text, "bad exponent");
    }
    exp10 += v;
  } else {
    return Bad(text, absl::StrCat("unknown suffix \"", suffix.substr(0, 8), "\""));
  }
  if (digits.empty()) return int64_t{0};
  if (digits.size() > 30) return Bad(text, "too many digits");
  // Remove trailing zeros into the exponent so "1000m" is exact.
  while (exp10 < 0 && digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (exp10 < 0) return Bad(text, "not a whole number");
  const __int128 limit = kMaxQuantity;
  __int128 v = 0;
  for (char c : digits) {
    v = v * 10 + (c - '0');
    if (v > limit) return Bad(text, "too large");
  }
  for (int k = 0; k < exp10; ++k) {
    v *= 10;
    if (v > limit) return Bad(text, "too large");
  }
  for (int k = 0; k < exp2; ++k) {
    v *= 2;
    if (v > limit) return Bad(text, "too large");
  }
  return static_cast<int64_t>(negative ? -v : v);
}

}  // namespace topogang
