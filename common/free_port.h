// A free TCP port on 127.0.0.1 (bind to port 0 and read it back), for tests and load tools that
// must name a port before the server starts. Racy by nature: callers retry on a bind failure.
#pragma once

namespace topogang {

int PickFreePort();

}  // namespace topogang
