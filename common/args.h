// Minimal subcommand flag parsing: "--name value", "--name=value" and boolean "--name".
// Each subcommand declares its flags so that a typo is an error, not a silent default.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace topogang {

struct Args {
  std::map<std::string, std::string> values;
  std::vector<std::string> positional;
  bool Has(const std::string& k) const { return values.count(k) > 0; }
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
  }
};

// `with_value` flags take a value; `booleans` do not. Unknown flags are errors.
absl::StatusOr<Args> ParseArgs(int argc, char** argv, int first,
                               const std::set<std::string>& with_value,
                               const std::set<std::string>& booleans);

}  // namespace topogang
