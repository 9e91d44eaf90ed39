#include "tb/tlm/topology.h"

#include <functional>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::tlmsys {

const char* port_name(int port) {
  static const char* const kNames[kNumPorts] = {"+X", "-X", "+Y", "-Y", "+Z", "-Z"};
  return port >= 0 && port < kNumPorts ? kNames[port] : "?";
}

Topology::Topology(int x, int y, int z) : dim_{x, y, z} {
  if (x < 1 || y < 1 || z < 1)
    throw Error(fmt::format("topology {}x{}x{}: every dimension must be at least 1", x, y, z));
}

Coord Topology::coord(int rank) const {
  Coord c;
  c.c[0] = rank % dim_[0];
  c.c[1] = rank / dim_[0] % dim_[1];
  c.c[2] = rank / (dim_[0] * dim_[1]);
  return c;
}

int Topology::rank(const Coord& c) const { return c.c[0] + dim_[0] * (c.c[1] + dim_[1] * c.c[2]); }

int Topology::neighbor(int r, int port) const {
  const int d = port_dim(port), n = dim_[d];
  if (n == 1) return -1;
  Coord c = coord(r);
  c.c[d] = (c.c[d] + (port_plus(port) ? 1 : n - 1)) % n;
  return rank(c);
}

std::vector<int> Topology::route(int src, int dst) const {
  std::vector<int> ports;
  const Coord s = coord(src), t = coord(dst);
  for (int d = 0; d < 3; ++d) {
    const int n = dim_[d];
    const int forward = ((t.c[d] - s.c[d]) % n + n) % n;
    if (forward == 0) continue;
    const int backward = n - forward;
    const bool plus = forward < backward || (forward == backward && s.c[d] % 2 == 0);
    ports.insert(ports.end(), plus ? forward : backward, 2 * d + (plus ? 0 : 1));
  }
  return ports;
}

std::vector<int> Topology::ring(int r, int d) const {
  std::vector<int> out;
  Coord c = coord(r);
  for (int i = 0; i < dim_[d]; ++i) {
    c.c[d] = i;
    out.push_back(rank(c));
  }
  return out;
}

std::vector<int> Topology::snake() const {
  // Walk X back and forth within each Y row, the rows back and forth within each Z layer.
  std::vector<int> out;
  for (int z = 0; z < dim_[2]; ++z) {
    for (int yi = 0; yi < dim_[1]; ++yi) {
      const int y = z % 2 == 0 ? yi : dim_[1] - 1 - yi;
      for (int xi = 0; xi < dim_[0]; ++xi) {
        const int x = (yi + z * dim_[1]) % 2 == 0 ? xi : dim_[0] - 1 - xi;
        Coord c;
        c.c[0] = x;
        c.c[1] = y;
        c.c[2] = z;
        out.push_back(rank(c));
      }
    }
  }
  return out;
}

std::string Topology::dependency_cycle(bool dateline_vcs) const {
  // Channel id: (chip * kNumPorts + port) * 2 + vc.
  const int channels = chips() * kNumPorts * 2;
  std::vector<std::vector<int>> next(channels);
  for (int s = 0; s < chips(); ++s) {
    for (int t = 0; t < chips(); ++t) {
      int at = s, prev = -1, vc = 0, dim = -1;
      for (int port : route(s, t)) {
        if (port_dim(port) != dim) {
          dim = port_dim(port);
          vc = 0;
        }
        const int ch = (at * kNumPorts + port) * 2 + vc;
        if (prev >= 0) next[prev].push_back(ch);
        prev = ch;
        const int from = coord(at).c[dim];
        at = neighbor(at, port);
        const int to = coord(at).c[dim];
        const bool wrapped = port_plus(port) ? to < from : to > from;
        if (dateline_vcs && wrapped) vc = 1;
      }
    }
  }
  // Depth-first search for a back edge.
  std::vector<int> state(channels, 0), stack;
  std::string cycle;
  std::function<bool(int)> visit = [&](int ch) {
    state[ch] = 1;
    stack.push_back(ch);
    for (int n : next[ch]) {
      if (state[n] == 1) {
        bool in = false;
        for (int c : stack) {
          if (c == n) in = true;
          if (in) {
            const int vc = c % 2, port = c / 2 % kNumPorts, chip = c / 2 / kNumPorts;
            cycle += fmt::format("chip {} {} vc{} -> ", chip, port_name(port), vc);
          }
        }
        cycle += fmt::format("chip {} {} vc{}", n / 2 / kNumPorts, port_name(n / 2 % kNumPorts), n % 2);
        return true;
      }
      if (state[n] == 0 && visit(n)) return true;
    }
    state[ch] = 2;
    stack.pop_back();
    return false;
  };
  for (int ch = 0; ch < channels; ++ch)
    if (state[ch] == 0 && visit(ch)) return cycle;
  return "";
}

}  // namespace ncore::tlmsys
