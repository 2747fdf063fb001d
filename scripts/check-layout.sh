#!/usr/bin/env bash
# The dependency rule between the project's folders (docs/architecture.md), checked on every
# `#include "dir/..."` of every source file: a folder may include only the folders listed for
# it. CMake link dependencies encode the same rule; this check also catches a header-only
# include that links by accident. Run by ctest (layout_check) and by hand.
set -uo pipefail
cd "${LAYOUT_ROOT:-$(dirname "$0")/..}"
declare -A allow=(
  [common]="common"
  [topology]="common topology"
  [scheduler]="common topology scheduler"
  [sim]="common topology scheduler sim"
  [config]="common topology scheduler config"
  [k8s]="common topology scheduler k8s"
  [daemon]="common topology scheduler k8s daemon"
  [extender]="common topology scheduler k8s daemon extender"
  [kube]="common topology scheduler k8s daemon kube"
  [api]="common topology scheduler k8s daemon api topogang"
  [agent]="common agent topogang"
  [cli]="common topology scheduler sim config k8s daemon kube api topogang cli"
  [topogangd]="common topology scheduler config k8s daemon extender kube api topogangd"
)
status=0
for dir in "${!allow[@]}"; do
  [ -d "$dir" ] || continue
  while IFS=: read -r file line inc; do
    top=${inc#*\"}
    top=${top%%/*}
    case "$top" in absl|prometheus|cpprest|boost|simdjson|nlohmann|yaml-cpp|gtest|gmock|grpcpp) continue ;; esac
    if [[ " ${allow[$dir]} " != *" $top "* ]]; then
      echo "layout: $file:$line includes \"$top/...\"; $dir/ may include only: ${allow[$dir]}"
      status=1
    fi
  done < <(grep -rnoE '#include "[A-Za-z0-9_.-]+/' "$dir" --include='*.h' --include='*.cc' || true)
done
# No source file over 500 lines without a reason stated at its top ("Over 500 lines: ...").
while read -r n file; do
  [ "$file" = total ] && continue
  if [ "$n" -gt 500 ] && ! head -n 15 "$file" | grep -q "Over 500 lines"; then
    echo "layout: $file has $n lines and no 'Over 500 lines: <reason>' note at its top"
    status=1
  fi
done < <(find . \( -path './build*' -o -path ./.git \) -prune -o \( -name "*.h" -o -name "*.cc" \) -print | xargs wc -l)
[ $status -eq 0 ] && echo "layout: ok (${#allow[@]} folders)"
exit $status
