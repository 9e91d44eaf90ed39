#pragma once
// The NeuronLink topology: chips on an X x Y x Z torus (Z = instances of an UltraServer), ranks
// numbered x + X*y + X*Y*z. Each chip has up to six ports (+X, -X, +Y, -Y, +Z, -Z); a dimension
// of size 1 has no links.
//
// Routing is dimension-ordered (X, then Y, then Z), the shorter way round each ring. When both
// ways are equally long (distance n/2 on an even ring), a chip with an even coordinate goes the
// + way and one with an odd coordinate the - way, so the pairwise exchanges of recursive
// halving/doubling use disjoint links. Deadlock freedom (with buffered, credit-flow links) is
// checked on the channel dependency graph: two virtual channels per link, a packet moving to
// VC 1 after it crosses a ring's dateline (the wrap-around link) and back to VC 0 when it turns
// to the next dimension.

#include <string>
#include <vector>

namespace ncore::tlmsys {

enum Port : int { kXPlus = 0, kXMinus = 1, kYPlus = 2, kYMinus = 3, kZPlus = 4, kZMinus = 5 };
inline constexpr int kNumPorts = 6;
const char* port_name(int port);
inline int port_dim(int port) { return port / 2; }
inline bool port_plus(int port) { return port % 2 == 0; }

struct Coord {
  int c[3] = {0, 0, 0};  // x, y, z
};

class Topology {
 public:
  Topology(int x, int y, int z);
  int chips() const { return dim_[0] * dim_[1] * dim_[2]; }
  int dim(int d) const { return dim_[d]; }
  Coord coord(int rank) const;
  int rank(const Coord& c) const;
  bool has_port(int port) const { return dim_[port_dim(port)] > 1; }
  int neighbor(int rank, int port) const;
  // The ports a message from src to dst leaves by, hop after hop (empty when src == dst).
  std::vector<int> route(int src, int dst) const;
  int hops(int src, int dst) const { return static_cast<int>(route(src, dst).size()); }
  // The chips along dimension d through `rank`, starting at coordinate 0.
  std::vector<int> ring(int rank, int d) const;
  // A ring through every chip whose consecutive chips are neighbours (a boustrophedon through
  // X, then Y, then Z); when a dimension is odd the closing step may take several hops.
  std::vector<int> snake() const;
  // Searches the channel dependency graph of every src->dst route for a cycle; with
  // dateline_vcs false every link has a single virtual channel. Returns "" when acyclic, else
  // the cycle as "chip port vc -> ...".
  std::string dependency_cycle(bool dateline_vcs) const;

 private:
  int dim_[3];
};

}  // namespace ncore::tlmsys
