// `topogang simulate`: runs a job trace (or a generated one) against scheduling policies and
// reports placement quality (docs/placement-quality.md).
#pragma once

namespace topogang::cli {

int RunSimulate(int argc, char** argv);

}  // namespace topogang::cli
