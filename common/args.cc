#include "common/args.h"

#include "absl/strings/str_cat.h"

namespace topogang {

absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first,
                               const std::set<std::string>& with_value,
                               const std::set<std::string>& booleans) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      a.positional.push_back(arg);
      continue;
    }
    std::string key = arg.substr(2), value;
    bool has_inline = false;
    if (auto eq = key.find('='); eq != std::string::npos) {
      value = key.substr(eq + 1);
      key = key.substr(0, eq);
      has_inline = true;
    }
    if (booleans.count(key)) {
      if (has_inline && value != "true" && value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("--", key, " takes no value"));
      }
      a.values[key] = has_inline ? value : "true";
    } else if (with_value.count(key)) {
      if (!has_inline) {
        if (i + 1 >= argc)
          return absl::InvalidArgumentError(absl::StrCat("--", key, " needs a value"));
        value = argv[++i];
      }
      a.values[key] = value;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag --", key));
    }
  }
  return a;
}

}  // namespace topogang
