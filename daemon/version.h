// The project's version (CMake's PROJECT_VERSION), defined in one file so that a version bump
// rebuilds one object: the build_info metric and the User-Agent topogangd sends both read it.
#pragma once

namespace topogang {

const char* TopogangVersion();

}  // namespace topogang
