// Over 500 lines: one benchmark driver (the simulated agents of both protocols, the daemon child
// process, the measurements and the report), read top to bottom.
// agent_load: N simulated node agents (default 12,500, one per node of the 100k-GPU example)
// against a real topogangd gRPC front end in a forked child process, over loopback.
// Measures the daemon's CPU and RSS (from /proc/<pid>) while every agent heartbeats at the
// interval, and the latency from an XID report or a heartbeat loss to the health bit flipping
// (taken from the daemon's own event timestamps, streamed through WatchDecisions).
//
//   agent_load [--agents 12500] [--interval-s 10] [--measure-s 60] [--window-s 30]
//              [--monitor-ms 1000] [--channels 32] [--xids 50] [--lost 50]
//              [--mode datagram|stream] [--batch-ms 50] [--keep-channels]
//              [--cluster examples/clusters/hyperscale-100k.yaml]
// --mode datagram (what agents do by default): heartbeats are signed UDP datagrams
// (common/heartbeat_datagram.h), XIDs ReportEvent calls, and the registration connections are
// closed once everyone registered, as idle agent channels are (--keep-channels keeps them).
// --mode stream: one ReportHealth stream per agent carries heartbeats and XIDs, each acked (the
// agents' protocol before datagrams). Registration goes over --channels HTTP/2 connections
// (--channels 12500: one per agent, as on a real cluster).
#include <grpcpp/create_channel.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "api/grpc_server.h"
#include "common/args.h"
#include "common/heartbeat_datagram.h"
#include "config/loader.h"
#include "daemon/daemon_state.h"
#include "topogang/v1/agent.grpc.pb.h"
#include "topogang/v1/placement.grpc.pb.h"

namespace {

using namespace topogang;
namespace v1 = ::topogang::v1;

struct ProcStats {
  double cpu_s = 0;
  long rss_kb = 0, hwm_kb = 0;
  int threads = 0;
};

ProcStats ReadProc(pid_t pid) {
  ProcStats p;
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string s((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the ")" of comm: state is field 3; utime 14, stime 15 (1-based).
  size_t rp = s.rfind(')');
  if (rp != std::string::npos) {
    std::vector<std::string> f;
    std::string cur;
    for (char c : s.substr(rp + 2)) {
      if (c == ' ') {
        f.push_back(cur);
        cur.clear();
      } else {
        cur += c;
      }
    }
    if (f.size() > 13) {
      const double hz = sysconf(_SC_CLK_TCK);
      p.cpu_s = (std::stod(f[11]) + std::stod(f[12])) / hz;
    }
  }
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) p.rss_kb = std::stol(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) p.hwm_kb = std::stol(line.substr(6));
    if (line.rfind("Threads:", 0) == 0) p.threads = std::stoi(line.substr(8));
  }
  return p;
}

std::string TokenOf(const std::string& node) { return "load-token-" + node + "-0000000000"; }

// One simulated agent: a ReportHealth stream; the scheduler thread pushes heartbeats.
class AgentStream : public grpc::ClientBidiReactor<v1::HealthReport, v1::HealthAck> {
 public:
  AgentStream(v1::AgentService::Stub* stub, std::string node) : node_(std::move(node)) {
    ctx_.AddMetadata("authorization", "Bearer " + TokenOf(node_));
    stub->async()->ReportHealth(&ctx_, this);
    StartRead(&ack_);
    StartCall();
  }
  // False when a write is still in flight or the stream ended.
  bool TrySend(const v1::HealthReport& r) {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (writing_ || done_) return false;
      writing_ = true;
      out_ = r;
    }
    StartWrite(&out_);
    return true;
  }
  bool Heartbeat(uint64_t seq) {
    v1::HealthReport r;
    r.set_node(node_);
    r.mutable_heartbeat()->set_seq(seq);
    if (!TrySend(r)) return false;
    last_beat_ms_ = absl::ToUnixMillis(absl::Now());
    return true;
  }
  bool Xid(uint32_t xid) {
    v1::HealthReport r;
    r.set_node(node_);
    r.mutable_gpu_event()->set_gpu_index(0);
    r.mutable_gpu_event()->set_kind(v1::GpuEvent::XID);
    r.mutable_gpu_event()->set_xid(xid);
    xid_sent_ = absl::Now();
    xid_sent_ms_ = absl::ToUnixMillis(xid_sent_);
    return TrySend(r);
  }
  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> l(mu_);
    writing_ = false;
    if (!ok) write_failed_ = true;
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    ++acks_;
    if (ack_.gpu_unhealthy()) xid_rtt_ = absl::Now() - xid_sent_;
    StartRead(&ack_);
  }
  void OnDone(const grpc::Status& s) override {
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    status_ = s;
    cv_.notify_all();
  }
  void Cancel() { ctx_.TryCancel(); }
  void WaitDone() {
    std::unique_lock<std::mutex> l(mu_);
    cv_.wait(l, [&] { return done_; });
  }
  bool done() {
    std::lock_guard<std::mutex> l(mu_);
    return done_;
  }
  const std::string& node() const { return node_; }
  std::atomic<int64_t> acks_{0};
  std::atomic<int64_t> last_beat_ms_{0};
  int64_t xid_sent_ms_ = 0;
  absl::Time xid_sent_;
  absl::Duration xid_rtt_ = absl::ZeroDuration();
  grpc::Status status_;

 private:
  std::string node_;
  grpc::ClientContext ctx_;
  v1::HealthAck ack_;
  v1::HealthReport out_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool writing_ = false, done_ = false, write_failed_ = false;
};

struct Percentiles {
  std::string Format(std::vector<double> v, const char* unit) {
    if (v.empty()) return "n/a";
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
    };
    return absl::StrFormat("n=%d min %.1f %s, median %.1f, p99 %.1f, max %.1f", v.size(), v.front(),
                           unit, at(0.5), at(0.99), v.back());
  }
};

[[noreturn]] void RunDaemon(Cluster cluster, const GrpcServerOptions& opts, int port_fd,
                            int stop_fd) {
  SystemClock clock;
  DaemonState state(GangScheduler(std::move(cluster)), clock, 200000);
  auto server = StartGrpcServer(state, opts);
  if (!server.ok()) {
    std::cerr << "daemon: " << server.status() << "\n";
    _exit(1);
  }
  int ports[2] = {(*server)->port(), (*server)->datagrams() ? (*server)->datagrams()->port() : 0};
  (void)!write(port_fd, ports, sizeof(ports));
  char c;
  (void)!read(stop_fd, &c, 1);  // parent closes the pipe to stop us
  (*server)->Shutdown();
  state.Shutdown();
  _exit(0);
}

}  // namespace

namespace {

// One simulated agent in datagram mode: its registration and its next seq.
struct DatagramAgent {
  uint32_t agent_id = 0, epoch = 0;
  std::string key;
  uint64_t seq = 0;
};

// A UDP socket connected to the daemon's datagram port; returns -1 on failure.
int OpenUdp(int port) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return -1;
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  auto args = ParseArgs(argc, argv, 1,
                        {"agents", "interval-s", "measure-s", "window-s", "monitor-ms", "channels",
                         "xids", "lost", "cluster", "mode", "batch-ms"},
                        {"help", "keep-channels"});
  if (!args.ok() || args->Has("help")) {
    std::cerr << "usage: agent_load [--agents N] [--interval-s S] [--measure-s S] [--window-s S] "
                 "[--monitor-ms MS] [--channels C] [--xids K] [--lost L] [--mode datagram|stream] "
                 "[--batch-ms MS] [--keep-channels] [--cluster FILE]\n";
    return args.ok() ? 0 : 2;
  }
  auto num = [&](const char* f, int def) {
    int v = def;
    if (args->Has(f) && !absl::SimpleAtoi(args->Get(f), &v)) {
      std::cerr << "--" << f << " wants a number\n";
      std::exit(2);
    }
    return v;
  };
  const int agents = num("agents", 12500), interval_s = num("interval-s", 10),
            measure_s = num("measure-s", 60), window_s = num("window-s", 30),
            monitor_ms = num("monitor-ms", 1000), channels = num("channels", 32),
            xids = num("xids", 50), lost = num("lost", 50), batch_ms = num("batch-ms", 50);
  const std::string mode = args->Get("mode", "datagram");
  if (mode != "datagram" && mode != "stream") {
    std::cerr << "--mode wants datagram or stream\n";
    return 2;
  }
  const bool datagram = mode == "datagram";
  const std::string cluster_file = args->Get(
      "cluster", std::string(TOPOGANG_SOURCE_DIR) + "/examples/clusters/hyperscale-100k.yaml");

  auto loaded = LoadClusterFiles(cluster_file, "");
  if (!loaded.ok()) {
    std::cerr << loaded.status() << "\n";
    return 2;
  }
  auto cluster = BuildCluster(*loaded);
  if (!cluster.ok()) {
    std::cerr << cluster.status() << "\n";
    return 2;
  }
  if (agents > cluster->num_nodes() || xids + lost > agents / 2) {
    std::cerr << "cluster has " << cluster->num_nodes() << " nodes; need agents <= nodes and "
              << "xids + lost <= agents / 2\n";
    return 2;
  }
  std::vector<std::string> nodes;
  for (int i = 0; i < agents; ++i) nodes.push_back(cluster->node(i).name);

  GrpcServerOptions opts;
  opts.address = "127.0.0.1:0";
  opts.heartbeat_interval = absl::Seconds(interval_s);
  opts.heartbeat_window = absl::Seconds(window_s);
  opts.monitor_period = absl::Milliseconds(monitor_ms);
  opts.datagram_port = datagram ? 0 : -1;
  opts.datagram_batch = absl::Milliseconds(batch_ms);
  for (const std::string& n : nodes) opts.tokens.node_by_token[TokenOf(n)] = n;

  int port_pipe[2], stop_pipe[2];
  if (pipe(port_pipe) != 0 || pipe(stop_pipe) != 0) return 1;
  // Fork before any gRPC object exists in this process.
  pid_t daemon = fork();
  if (daemon == 0) {
    close(stop_pipe[1]);
    RunDaemon(*std::move(cluster), opts, port_pipe[1], stop_pipe[0]);
  }
  close(stop_pipe[0]);
  int ports[2] = {0, 0};
  if (read(port_pipe[0], ports, sizeof(ports)) != sizeof(ports)) {
    std::cerr << "daemon did not start\n";
    return 1;
  }
  const int port = ports[0], udp_port = ports[1];
  const ProcStats idle = ReadProc(daemon);
  std::cout << "daemon pid " << daemon << " on 127.0.0.1:" << port
            << (datagram ? absl::StrCat(" (datagrams on UDP ", udp_port, ")") : "") << ", cluster "
            << cluster_file.substr(cluster_file.rfind('/') + 1) << ", mode " << mode
            << "; idle RSS " << idle.rss_kb / 1024 << " MiB\n";
  const std::string target = absl::StrCat("127.0.0.1:", port);

  std::vector<std::unique_ptr<v1::AgentService::Stub>> stubs;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments ca;
    ca.SetInt("agent_load.channel", c);  // distinct args = distinct connection
    stubs.push_back(v1::AgentService::NewStub(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), ca)));
  }

  // 1. Register everyone (bounded concurrency), then open the health streams (stream mode). In
  // datagram mode each agent sends its first heartbeat as soon as it registered, as real ones do
  // (registering 12,500 agents over 12,500 connections takes longer than the window).
  std::vector<int> udp;
  for (int k = 0; datagram && k < std::min(channels, 64); ++k) {
    udp.push_back(OpenUdp(udp_port));
    if (udp.back() < 0) {
      std::cerr << "cannot open a UDP socket to port " << udp_port << "\n";
      return 1;
    }
  }
  std::vector<DatagramAgent> dagents(agents);
  std::vector<std::atomic<int64_t>> last_beat_ms(agents);  // 0 = not registered yet
  const int64_t interval_ms = interval_s * 1000;
  // While the others register, agents registered an interval ago send their next heartbeat.
  auto beat_registered = [&] {
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    for (int i = 0; i < agents && datagram; ++i) {
      const int64_t last = last_beat_ms[i].load(std::memory_order_acquire);
      if (last == 0 || now_ms - last < interval_ms) continue;
      DatagramAgent& a = dagents[i];
      const std::string d = EncodeHeartbeatDatagram({a.agent_id, a.epoch, ++a.seq}, a.key);
      (void)!send(udp[i % udp.size()], d.data(), d.size(), MSG_DONTWAIT);
      last_beat_ms[i] = now_ms;
    }
  };
  absl::Time next_sweep = absl::Now();
  const absl::Time reg_start = absl::Now();
  {
    std::mutex mu;
    std::condition_variable cv;
    int in_flight = 0, failed = 0;
    std::string first_error;
    struct Call {
      grpc::ClientContext ctx;
      v1::RegisterRequest req;
      v1::RegisterResponse resp;
    };
    std::vector<std::unique_ptr<Call>> calls(agents);
    // One connection per agent (--channels = --agents) in datagram mode: each agent drops its
    // connection once registered, as real ones do, so only those registering hold one.
    const bool release = datagram && channels == agents && !args->Has("keep-channels");
    std::vector<int> registered;
    size_t released = 0;
    for (int i = 0; i < agents; ++i) {
      {
        std::unique_lock<std::mutex> l(mu);
        while (in_flight >= 256) {
          cv.wait_for(l, std::chrono::milliseconds(20));
          if (absl::Now() >= next_sweep) {
            l.unlock();
            beat_registered();
            next_sweep = absl::Now() + absl::Milliseconds(100);
            l.lock();
          }
        }
        ++in_flight;
        for (; release && released < registered.size(); ++released) {
          calls[registered[released]].reset();  // the finished call holds its channel
          stubs[registered[released]].reset();
        }
      }
      if (absl::Now() >= next_sweep) {
        beat_registered();
        next_sweep = absl::Now() + absl::Milliseconds(100);
        if (std::getenv("AGENT_LOAD_TRACE") && i % 1000 == 0) {
          int fds = 0;
          for (const auto& e :
               std::filesystem::directory_iterator(absl::StrCat("/proc/", daemon, "/fd"))) {
            (void)e;
            ++fds;
          }
          std::cerr << "registering " << i << ": daemon RSS " << ReadProc(daemon).rss_kb / 1024
                    << " MiB, " << fds << " open files\n";
        }
      }
      calls[i] = std::make_unique<Call>();
      Call& c = *calls[i];
      c.ctx.AddMetadata("authorization", "Bearer " + TokenOf(nodes[i]));
      c.req.set_node(nodes[i]);
      c.req.set_datagram_heartbeats(datagram);
      for (int g = 0; g < 8; ++g) {
        v1::Gpu* gpu = c.req.add_gpus();
        gpu->set_index(g);
        gpu->set_uuid(absl::StrCat("GPU-", nodes[i], "-", g));
        gpu->set_model("NVIDIA H100 80GB HBM3");
      }
      stubs[i % channels]->async()->Register(&c.ctx, &c.req, &c.resp, [&, i](grpc::Status s) {
        if (s.ok() && datagram && c.resp.heartbeat_port() != 0) {
          DatagramAgent& a = dagents[i];
          a = {c.resp.agent_id(), c.resp.epoch(), c.resp.heartbeat_key(), 1};
          const std::string d = EncodeHeartbeatDatagram({a.agent_id, a.epoch, a.seq}, a.key);
          (void)!send(udp[i % udp.size()], d.data(), d.size(), MSG_DONTWAIT);
          last_beat_ms[i].store(absl::ToUnixMillis(absl::Now()), std::memory_order_release);
        }
        std::lock_guard<std::mutex> l(mu);
        if (!s.ok() && failed++ == 0) first_error = s.error_message();
        registered.push_back(i);
        --in_flight;
        cv.notify_all();
      });
    }
    std::unique_lock<std::mutex> l(mu);
    cv.wait(l, [&] { return in_flight == 0; });
    if (failed) {
      std::cerr << failed << " registrations failed, first: " << first_error << "\n";
      return 1;
    }
    for (int i = 0; i < agents && datagram; ++i) {
      if (calls[i] && calls[i]->resp.heartbeat_port() == 0) {
        std::cerr << "the daemon offered no datagram heartbeats\n";
        return 1;
      }
    }
  }
  const absl::Duration reg_time = absl::Now() - reg_start;
  std::vector<std::unique_ptr<AgentStream>> streams;
  std::unique_ptr<v1::AgentService::Stub> event_stub;
  if (datagram) {
    // Agents keep no call open; their idle channels close (after a minute, by default).
    if (!args->Has("keep-channels")) stubs.clear();
    event_stub =
        v1::AgentService::NewStub(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  } else {
    for (int i = 0; i < agents; ++i) {
      streams.push_back(std::make_unique<AgentStream>(stubs[i % channels].get(), nodes[i]));
    }
  }
  std::cout << "registered " << agents << " agents in " << absl::FormatDuration(reg_time) << " ("
            << static_cast<int>(agents / absl::ToDoubleSeconds(reg_time)) << "/s) over " << channels
            << " connections; "
            << (datagram ? absl::StrCat("datagrams from ", udp.size(), " UDP sockets",
                                        args->Has("keep-channels") ? ", connections kept"
                                                                   : ", connections closed")
                         : std::string("streams open"))
            << "\n";

  // Decisions, for the daemon-side time of each health flip.
  auto pstub = v1::PlacementService::NewStub(
      grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  grpc::ClientContext wctx;
  v1::WatchDecisionsRequest wreq;
  wreq.set_from_now(true);
  auto watch = pstub->WatchDecisions(&wctx, wreq);
  watch->WaitForInitialMetadata();
  std::mutex ev_mu;
  std::map<std::string, int64_t> gpu_flip_ms, node_flip_ms;
  std::thread watcher([&] {
    v1::DecisionEvent ev;
    while (watch->Read(&ev)) {
      std::lock_guard<std::mutex> l(ev_mu);
      if (ev.kind() == "gpu-unhealthy") gpu_flip_ms.emplace(ev.node(), ev.time_unix_ms());
      if (ev.kind() == "node-unhealthy") node_flip_ms.emplace(ev.node(), ev.time_unix_ms());
    }
  });

  // XIDs in datagram mode: one ReportEvent call each, as an agent sends them.
  struct XidCall {
    grpc::ClientContext ctx;
    v1::HealthReport req;
    v1::HealthAck ack;
    absl::Time sent;
    int64_t sent_ms = 0;
    std::atomic<int64_t> rtt_us{0};
  };
  std::vector<std::unique_ptr<XidCall>> xid_calls;
  auto send_xid = [&](int k) {
    if (!datagram) return streams[k]->Xid(79);
    auto c = std::make_unique<XidCall>();
    c->ctx.AddMetadata("authorization", "Bearer " + TokenOf(nodes[k]));
    c->req.set_node(nodes[k]);
    c->req.mutable_gpu_event()->set_gpu_index(0);
    c->req.mutable_gpu_event()->set_kind(v1::GpuEvent::XID);
    c->req.mutable_gpu_event()->set_xid(79);
    c->sent = absl::Now();
    c->sent_ms = absl::ToUnixMillis(c->sent);
    XidCall* raw = c.get();
    event_stub->async()->ReportEvent(&raw->ctx, &raw->req, &raw->ack, [raw](grpc::Status s) {
      if (s.ok() && raw->ack.gpu_unhealthy()) {
        raw->rtt_us = absl::ToInt64Microseconds(absl::Now() - raw->sent);
      }
    });
    xid_calls.push_back(std::move(c));
    return true;
  };

  // 2. Heartbeats spread evenly over the interval; after one warm-up interval, measure.
  // `lost` agents, spread over the heartbeat phase (every stride-th), go silent a quarter into
  // the measurement; agents 0..xids-1 report XID 79, spread over the measurement.
  const int stride = lost ? agents / lost : 1;
  auto silent_index = [&](int i) {
    return lost && i % stride == stride - 1 && i / stride < lost ? i / stride : -1;
  };
  const absl::Time start = absl::Now();
  const absl::Duration interval = absl::Seconds(interval_s);
  const absl::Time measure_from = start + interval;
  const absl::Time measure_to = measure_from + absl::Seconds(measure_s);
  const absl::Time silence_at = measure_from + absl::Seconds(measure_s) / 4;
  ProcStats before{}, after{};
  bool measuring = false;
  int64_t sent = 0, skipped = 0, sent_in_window = 0, acks_in = 0;
  int xids_sent = 0;
  std::vector<int64_t> silent_last_ms(lost, 0);
  while (absl::Now() < measure_to) {
    const absl::Time now = absl::Now();
    if (!measuring && now >= measure_from) {
      before = ReadProc(daemon);
      measuring = true;
      sent_in_window = 0;
    }
    const int64_t due = static_cast<int64_t>(absl::FDivDuration(now - start, interval) * agents);
    for (; sent < due; ++sent) {
      const int i = static_cast<int>(sent % agents);
      if (now >= silence_at && silent_index(i) >= 0) continue;  // gone quiet
      bool ok = false;
      if (datagram) {
        DatagramAgent& a = dagents[i];
        const std::string d = EncodeHeartbeatDatagram({a.agent_id, a.epoch, ++a.seq}, a.key);
        ok = send(udp[i % udp.size()], d.data(), d.size(), MSG_DONTWAIT) ==
             static_cast<ssize_t>(d.size());
        if (ok) last_beat_ms[i].store(absl::ToUnixMillis(now));
      } else {
        ok = streams[i]->Heartbeat(static_cast<uint64_t>(sent / agents + 1));
      }
      if (ok) {
        ++sent_in_window;
      } else {
        ++skipped;
      }
    }
    for (int fd : udp) {  // the daemon's acknowledgements of each registration's first datagram
      char buf[64];
      while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) ++acks_in;
    }
    // XIDs: one every measure_s/xids seconds on agents 0..xids-1.
    if (measuring && xids_sent < xids &&
        now >= measure_from + absl::Seconds(measure_s) * xids_sent / xids) {
      if (send_xid(xids_sent)) ++xids_sent;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  after = ReadProc(daemon);
  for (int k = 0; k < lost; ++k) {
    const int i = k * stride + stride - 1;
    silent_last_ms[k] = datagram ? last_beat_ms[i].load() : streams[i]->last_beat_ms_.load();
  }
  // Give the monitor one more window to flag every silent agent that has not been flagged yet.
  const absl::Time wait_end =
      absl::Now() + absl::Seconds(window_s) + absl::Milliseconds(2 * monitor_ms);
  while (absl::Now() < wait_end) {
    {
      std::lock_guard<std::mutex> l(ev_mu);
      if (static_cast<int>(node_flip_ms.size()) >= lost &&
          static_cast<int>(gpu_flip_ms.size()) >= xids_sent)
        break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  const ProcStats end_stats = ReadProc(daemon);
  int fds = 0;
  for (const auto& e : std::filesystem::directory_iterator(absl::StrCat("/proc/", daemon, "/fd"))) {
    (void)e;
    ++fds;
  }

  int64_t acks = acks_in;
  for (auto& s : streams) acks += s->acks_;
  std::vector<double> xid_flip_ms, xid_rtt_ms, loss_flip_ms, loss_total_ms;
  {
    std::lock_guard<std::mutex> l(ev_mu);
    for (int k = 0; k < xids_sent; ++k) {
      auto it = gpu_flip_ms.find(nodes[k]);
      const int64_t sent_ms = datagram ? xid_calls[k]->sent_ms : streams[k]->xid_sent_ms_;
      if (it != gpu_flip_ms.end()) xid_flip_ms.push_back(it->second - sent_ms);
      if (datagram && xid_calls[k]->rtt_us > 0) xid_rtt_ms.push_back(xid_calls[k]->rtt_us / 1e3);
      if (!datagram && streams[k]->xid_rtt_ > absl::ZeroDuration()) {
        xid_rtt_ms.push_back(absl::ToDoubleMilliseconds(streams[k]->xid_rtt_));
      }
    }
    for (int k = 0; k < lost; ++k) {
      auto it = node_flip_ms.find(nodes[k * stride + stride - 1]);
      if (it == node_flip_ms.end() || silent_last_ms[k] == 0) continue;
      loss_total_ms.push_back(it->second - silent_last_ms[k]);
      loss_flip_ms.push_back(it->second - silent_last_ms[k] - window_s * 1000.0);
    }
  }
  const double cpu = after.cpu_s - before.cpu_s;
  const double secs = absl::ToDoubleSeconds(measure_to - measure_from);
  Percentiles p;
  std::cout << absl::StrFormat(
      "heartbeats: interval %ds, %d sent in the %.0fs window (%.0f/s), %d skipped (%s), %d acks "
      "total\n",
      interval_s, sent_in_window, secs, sent_in_window / secs, skipped,
      datagram ? "send failed" : "write in flight", acks);
  std::cout << absl::StrFormat(
      "daemon CPU: %.2f s in %.0f s = %.1f%% of one core (%.1f us per heartbeat)\n", cpu, secs,
      100 * cpu / secs, sent_in_window ? 1e6 * cpu / sent_in_window : 0.0);
  std::cout << absl::StrFormat(
      "daemon RSS: %ld MiB (idle %ld MiB, peak %ld MiB), %d threads, %d open files\n",
      end_stats.rss_kb / 1024, idle.rss_kb / 1024, end_stats.hwm_kb / 1024, end_stats.threads, fds);
  std::cout << "XID 79 report -> GPU health bit flipped (daemon event time - agent send time, ms): "
            << p.Format(xid_flip_ms, "ms") << "\n";
  std::cout << "XID 79 report -> ack (gpu_unhealthy) round trip, ms: " << p.Format(xid_rtt_ms, "ms")
            << "\n";
  std::cout << "heartbeat loss: window " << window_s << " s, monitor every " << monitor_ms
            << " ms; flip after window expiry (ms): " << p.Format(loss_flip_ms, "ms") << "\n";
  std::cout << "heartbeat loss: last heartbeat -> node marked agent-lost (ms): "
            << p.Format(loss_total_ms, "ms") << "\n";

  for (auto& s : streams) s->Cancel();
  for (auto& s : streams) s->WaitDone();
  for (int fd : udp) close(fd);
  wctx.TryCancel();
  watcher.join();
  close(stop_pipe[1]);
  int st = 0;
  waitpid(daemon, &st, 0);
  return 0;
}
