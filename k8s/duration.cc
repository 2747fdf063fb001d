#include "k8s/duration.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace topogang {

absl::StatusOr<absl::Duration> ParseKubeDuration(absl::string_view where, absl::string_view text,
                                                 absl::Duration max, bool allow_zero) {
  const std::string v(absl::StripAsciiWhitespace(text));
  absl::Duration d;
  // absl::ParseDuration reads Go's syntax, and also "0" and "inf", which are refused here.
  const bool has_unit = !v.empty() && absl::ascii_isalpha(static_cast<unsigned char>(v.back()));
  if (!has_unit || !absl::ParseDuration(v, &d) || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, "=\"", v.substr(0, 40), "\": expected a duration such as 45m, 4h or 1h30m"));
  }
  if (d < absl::ZeroDuration() || (d == absl::ZeroDuration() && !allow_zero) || d > max) {
    const absl::Duration day = absl::Hours(24);
    const std::string most = max % day == absl::ZeroDuration() ? absl::StrCat(max / day, " days")
                                                               : absl::FormatDuration(max);
    return absl::InvalidArgumentError(absl::StrCat(where, "=\"", v.substr(0, 40), "\": must be ",
                                                   allow_zero ? "at least 0" : "more than 0",
                                                   " and at most ", most));
  }
  return d;
}

}  // namespace topogang
