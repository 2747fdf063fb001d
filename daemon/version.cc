#include "daemon/version.h"

#ifndef TOPOGANG_VERSION
#define TOPOGANG_VERSION "unknown"
#endif

namespace topogang {

const char* TopogangVersion() { return TOPOGANG_VERSION; }

}  // namespace topogang
