// The NeuronCore assembler: text -> Program. Syntax in model/README.md ("Assembly").
// Every error names file:line:col, what was expected and what was found.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "model/common/name_table.h"
#include "model/core/image.h"
#include "model/core/program.h"
#include "model/tensor/tensor_engine.h"

namespace ncore::model {
namespace {

// Bounds that keep any text within bounded time, memory and stack.
constexpr int kMaxNesting = 64;                      // parentheses and unary minus in one expression; .rept/.if blocks
constexpr int64_t kMaxReptCount = int64_t{1} << 20;  // iterations of one .rept
constexpr uint64_t kMaxExpandedLines = uint64_t{1} << 22;  // lines visited, .rept bodies counted each time
constexpr int64_t kMaxTensorDim = int64_t{1} << 32;

struct Token {
  std::string text;
  int col = 1;  // 1-based column of its first character
};

// Splits at whitespace outside brackets; '#' starts a comment.
std::vector<Token> tokenize(std::string_view line) {
  std::vector<Token> out;
  int depth = 0;
  Token cur;
  for (size_t i = 0; i <= line.size(); ++i) {
    const char c = i < line.size() ? line[i] : ' ';
    if (c == '#' && depth == 0) {
      if (!cur.text.empty()) out.push_back(cur);
      return out;
    }
    if ((c == ' ' || c == '\t' || c == '\r') && depth == 0) {
      if (!cur.text.empty()) out.push_back(cur);
      cur = Token{};
      continue;
    }
    if (cur.text.empty()) cur.col = static_cast<int>(i) + 1;
    if (c == '(' || c == '[') ++depth;
    if (c == ')' || c == ']') depth = std::max(0, depth - 1);
    cur.text += c;
  }
  if (!cur.text.empty()) out.push_back(cur);  // an unclosed bracket: the expression reports it
  return out;
}

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// The first word of a line (up to whitespace or a comment): enough to tell the block directives
// (.if, .else, .endif, .rept, .endr) apart, as tokenize()'s first token would.
std::string_view first_word(std::string_view line) {
  size_t b = 0;
  while (b < line.size() && (line[b] == ' ' || line[b] == '\t' || line[b] == '\r')) ++b;
  size_t e = b;
  while (e < line.size() && line[e] != ' ' && line[e] != '\t' && line[e] != '\r' && line[e] != '#') ++e;
  return line.substr(b, e - b);
}

class Assembler {
 public:
  Assembler(const ProgramText& text, const Symbols& predefined) : file_(text.file()), text_(text) {
    prog_.name = file_;
    symbols_.emplace_back();
    symbols_.back()["SBUF_PARTITION"] = kSbufPartitionStride;
    symbols_.back()["PSUM_BANK"] = 2048;
    for (const auto& [name, value] : predefined) symbols_.back()[name] = value;
  }

  Program run() {
    block(0, text_.lines());
    if (open_list_) {
      line_ = prog_.lists[*open_list_].loc.line - 1;
      fail(1, fmt::format("'.list {}' without a matching '.endlist'", prog_.lists[*open_list_].name));
    }
    resolve_list_refs();
    // A placed image is checked here, with its line: it must fit in HBM and miss every tensor.
    // The default layout depends on the core's window and is checked where the core is built.
    if (prog_.image_addr) layout_image(prog_, kCoreHbmBytes);
    return std::move(prog_);
  }

 private:
  [[noreturn]] void fail(int col, const std::string& what) const {
    throw AsmError(file_, line_ + 1, col, what);
  }

  // ---- expressions ---------------------------------------------------------------------
  std::optional<int64_t> lookup(const std::string& name) const {
    for (auto it = symbols_.rbegin(); it != symbols_.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return f->second;
    }
    return std::nullopt;
  }

  struct ExprParser {
    const Assembler& as;
    const std::string& s;
    int col0;
    size_t pos = 0;
    int depth = 0;  // open parentheses and unary minuses: bounded, so that no text overflows the stack

    struct Nest {
      ExprParser& p;
      explicit Nest(ExprParser& parser) : p(parser) {
        if (++p.depth > kMaxNesting)
          p.fail(fmt::format("expected at most {} nested parentheses or signs, found more", kMaxNesting));
      }
      ~Nest() { --p.depth; }
    };
    // Checked 64-bit arithmetic: an expression whose value does not fit is an error, never a wrap.
    [[noreturn]] void overflow(size_t at, int64_t a, char op, int64_t b) {
      pos = at;
      fail(fmt::format("expected a value within 64-bit signed range, found {} {} {} overflowing", a, op, b));
    }

    void skip() {
      while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos]))) ++pos;
    }
    [[noreturn]] void fail(const std::string& what) const {
      as.fail(col0 + static_cast<int>(pos), what);
    }
    int64_t parse_all() {
      const int64_t v = logic();
      skip();
      if (pos != s.size()) fail(fmt::format("expected an operator or the end of '{}', found '{}'", s, s.substr(pos)));
      return v;
    }
    bool eat(const char* op) {
      skip();
      const size_t n = std::strlen(op);
      if (s.compare(pos, n, op) != 0) return false;
      // '<' must not eat the first character of '<=' (likewise '>'), nor '=' of '=='.
      if (n == 1 && pos + 1 < s.size() && s[pos + 1] == '=') return false;
      pos += n;
      return true;
    }
    int64_t logic() {
      int64_t v = compare();
      for (;;) {
        if (eat("&&")) v = (compare() != 0) && v;
        else if (eat("||")) v = (compare() != 0) || v;
        else return v;
      }
    }
    int64_t compare() {
      const int64_t v = sum();
      if (eat("==")) return v == sum();
      if (eat("!=")) return v != sum();
      if (eat("<=")) return v <= sum();
      if (eat(">=")) return v >= sum();
      if (eat("<")) return v < sum();
      if (eat(">")) return v > sum();
      return v;
    }
    int64_t sum() {
      int64_t v = product();
      for (;;) {
        skip();
        if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
          const size_t at = pos;
          const char op = s[pos++];
          const int64_t r = product();
          int64_t out;
          const bool bad = op == '+' ? __builtin_add_overflow(v, r, &out) : __builtin_sub_overflow(v, r, &out);
          if (bad) overflow(at, v, op, r);
          v = out;
        } else {
          return v;
        }
      }
    }
    int64_t product() {
      int64_t v = unary();
      for (;;) {
        skip();
        if (pos < s.size() && (s[pos] == '*' || s[pos] == '/' || s[pos] == '%')) {
          const size_t op_at = pos;
          const char op = s[pos++];
          const size_t at = pos;
          const int64_t r = unary();
          if (op != '*' && r == 0) {
            pos = at;
            fail("division by zero");
          }
          if (op == '*') {
            int64_t product;
            if (__builtin_mul_overflow(v, r, &product)) overflow(op_at, v, op, r);
            v = product;
          } else {
            if (v == std::numeric_limits<int64_t>::min() && r == -1) overflow(op_at, v, op, r);
            v = op == '/' ? v / r : v % r;
          }
        } else {
          return v;
        }
      }
    }
    int64_t unary() {
      skip();
      if (pos < s.size() && s[pos] == '-') {
        const size_t at = pos++;
        Nest nest(*this);
        const int64_t v = unary();
        if (v == std::numeric_limits<int64_t>::min()) overflow(at, 0, '-', v);
        return -v;
      }
      return primary();
    }
    int64_t primary() {
      skip();
      if (pos >= s.size()) fail(fmt::format("expected a number or a name, found the end of '{}'", s));
      if (s[pos] == '(') {
        ++pos;
        Nest nest(*this);
        const int64_t v = logic();
        skip();
        if (pos >= s.size() || s[pos] != ')') fail("expected ')'");
        ++pos;
        return v;
      }
      if (std::isdigit(static_cast<unsigned char>(s[pos]))) {
        const size_t start = pos;
        int base = 10;
        if (s.compare(pos, 2, "0x") == 0 || s.compare(pos, 2, "0X") == 0) {
          base = 16;
          pos += 2;
        }
        std::string digits;
        while (pos < s.size() && (std::isxdigit(static_cast<unsigned char>(s[pos])) || s[pos] == '_')) {
          if (s[pos] != '_') digits += s[pos];
          ++pos;
        }
        if (digits.empty() || (base == 10 && digits.find_first_not_of("0123456789") != std::string::npos)) {
          pos = start;
          fail(fmt::format("expected a number, found '{}'", s.substr(start)));
        }
        uint64_t value = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
        if (ec != std::errc() || end != digits.data() + digits.size() ||
            value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          const size_t stop = pos;
          pos = start;
          fail(fmt::format("expected a number below 2^63, found '{}'", s.substr(start, stop - start)));
        }
        return static_cast<int64_t>(value);
      }
      if (is_ident_start(s[pos])) {
        const size_t start = pos;
        while (pos < s.size() && is_ident(s[pos])) ++pos;
        const std::string name = s.substr(start, pos - start);
        auto v = as.lookup(name);
        if (!v) {
          pos = start;
          fail(fmt::format("unknown name '{}' (define it with .equ, .tensor, .sem or .rept)", name));
        }
        return *v;
      }
      fail(fmt::format("expected a number or a name, found '{}'", s.substr(pos)));
    }
  };

  int64_t eval(const std::string& s, int col) const { return ExprParser{*this, s, col}.parse_all(); }

  // ---- lines -----------------------------------------------------------------------------
  // Lines are visited once each, .rept bodies once per iteration; blocks nest at most kMaxNesting
  // deep. Both bounds keep any text within bounded time and stack (a queue's instruction memory
  // bounds what the visits can emit).
  void block(int begin, int end) {
    if (++block_depth_ > kMaxNesting)
      fail(1, fmt::format("expected .rept and .if blocks nested at most {} deep, found more", kMaxNesting));
    for (int i = begin; i < end; ++i) {
      line_ = i;
      if (++lines_visited_ > kMaxExpandedLines)
        fail(1, fmt::format("expected at most {} lines after .rept expansion, found more", kMaxExpandedLines));
      auto tokens = tokenize(text_.line(i));
      if (tokens.empty()) continue;
      if (tokens[0].text == ".rept") {
        if (tokens.size() != 3) fail(tokens[0].col, "expected '.rept NAME COUNT'");
        const int close = find_endr(i);
        const std::string var = tokens[1].text;
        const int64_t count = eval(tokens[2].text, tokens[2].col);
        if (count < 0 || count > kMaxReptCount)
          fail(tokens[2].col, fmt::format("expected a count 0..{}, found {}", kMaxReptCount, count));
        ++rept_depth_;
        for (int64_t k = 0; k < count; ++k) {
          line_ = i;
          if (++lines_visited_ > kMaxExpandedLines)  // an iteration counts, even of an empty body
            fail(tokens[2].col, fmt::format("expected at most {} lines after .rept expansion, found more",
                                            kMaxExpandedLines));
          symbols_.emplace_back();
          symbols_.back()[var] = k;
          block(i + 1, close);
          symbols_.pop_back();
        }
        --rept_depth_;
        i = close;
        continue;
      }
      if (tokens[0].text == ".endr") fail(tokens[0].col, "'.endr' without '.rept'");
      if (tokens[0].text == ".if") {
        if (tokens.size() != 2) fail(tokens[0].col, "expected '.if EXPR' (no spaces in EXPR, or parenthesise it)");
        const auto [els, endif] = find_else_endif(i);
        const bool cond = eval(tokens[1].text, tokens[1].col) != 0;
        if (cond) block(i + 1, els >= 0 ? els : endif);
        else if (els >= 0) block(els + 1, endif);
        i = endif;
        continue;
      }
      if (tokens[0].text == ".else" || tokens[0].text == ".endif")
        fail(tokens[0].col, fmt::format("'{}' without '.if'", tokens[0].text));
      statement(tokens);
    }
    --block_depth_;
  }

  // The matching .else (-1 if none) and .endif of the .if on line `open`.
  std::pair<int, int> find_else_endif(int open) const {
    const ProgramText::Block b = text_.block(open);
    if (b.end < 0) fail(1, "'.if' without a matching '.endif'");
    return {b.middle, b.end};
  }

  int find_endr(int open) const {
    const int end = text_.block(open).end;
    if (end < 0) fail(1, "'.rept' without a matching '.endr'");
    return end;
  }

  void statement(std::vector<Token> tokens) {
    const std::string& head = tokens[0].text;
    if (head == ".list") return directive_list(tokens);
    if (head == ".endlist") {
      if (!open_list_) fail(tokens[0].col, "'.endlist' without '.list'");
      if (prog_.lists[*open_list_].entries.empty())
        fail(tokens[0].col, fmt::format("list '{}' has no descriptor (expected at least one)", prog_.lists[*open_list_].name));
      open_list_.reset();
      return;
    }
    if (open_list_ && head != "descriptor")
      fail(tokens[0].col, fmt::format("expected 'descriptor ...' or '.endlist' inside '.list {}', found '{}'",
                                      prog_.lists[*open_list_].name, head));
    if (head == "descriptor") return descriptor(tokens);
    if (head == ".queue") return directive_queue(tokens);
    if (head == ".equ") return directive_equ(tokens);
    if (head == ".sem") return directive_sem(tokens);
    if (head == ".tensor") return directive_tensor(tokens);
    if (head == ".image") return directive_image(tokens);
    if (head[0] == '.') fail(tokens[0].col, fmt::format("unknown directive '{}' (expected .queue, .equ, .sem, .tensor, .image, .list, .rept, .endr, .if)", head));
    if (head.back() == ':') {
      const std::string name = head.substr(0, head.size() - 1);
      if (name.empty() || !is_ident_start(name[0])) fail(tokens[0].col, fmt::format("bad label '{}'", head));
      if (rept_depth_ == 0 && !labels_.emplace(name).second)
        fail(tokens[0].col, fmt::format("label '{}' defined twice", name));
      label_ = name;
      label_queue_ = queue_;
      label_index_ = queue_ ? prog_.queues[static_cast<int>(*queue_)].size() : 0;
      tokens.erase(tokens.begin());
      if (tokens.empty()) return;
    }
    instruction(tokens);
  }

  // `.list NAME`: the descriptor lines up to `.endlist` make list NAME of the program image
  // (model/core/image.h); `dma_list engine=E list=NAME` runs it.
  void directive_list(const std::vector<Token>& t) {
    if (t.size() != 2) fail(t[0].col, "expected '.list NAME'");
    if (open_list_) fail(t[0].col, fmt::format("'.list' inside '.list {}' (close it with .endlist)", prog_.lists[*open_list_].name));
    const std::string& name = t[1].text;
    if (name.empty() || !is_ident_start(name[0]) || !std::all_of(name.begin(), name.end(), is_ident))
      fail(t[1].col, fmt::format("expected a list name, found '{}'", name));
    if (list_names_.count(name))
      fail(t[1].col, fmt::format("list '{}' is already defined at {}", name, prog_.lists[list_names_[name]].loc.str()));
    list_names_[name] = prog_.lists.size();
    open_list_ = prog_.lists.size();
    DescriptorList l;
    l.name = name;
    l.loc = loc(t[0].col);
    prog_.lists.push_back(std::move(l));
  }

  // `descriptor FIELD=VALUE ...` inside .list: dma_copy's fields but engine and last (the
  // list's engine runs it; its count ends it) and no wait, signal or tag.
  void descriptor(const std::vector<Token>& t) {
    if (!open_list_) fail(t[0].col, "'descriptor' outside '.list NAME' ... '.endlist'");
    DescriptorList& list = prog_.lists[*open_list_];
    if (list.entries.size() >= kDmaListMaxEntries)
      fail(t[0].col, fmt::format("list '{}': expected at most {} descriptors, found more", list.name, kDmaListMaxEntries));
    const auto& info = *opcode_info(isa::Opcode::kDmaCopy);
    CoreInstr in = default_instr(isa::Opcode::kDmaCopy);
    isa::Word w = encode(in);
    set_field(w, info, "last", 0, t[0].col);
    Pending s[2];
    PendingVe pv;
    for (size_t i = 1; i < t.size(); ++i) {
      const std::string key = split_kv(t[i]).first;
      if (key == "engine" || key == "last" || key == "wait" || key == "signal" || key == "tag")
        fail(t[i].col, fmt::format("a descriptor has no '{}' (the dma_list's engine runs it; its count ends the list)", key));
      argument(t[i], info, w, in, s, pv);
    }
    const DmaDescriptor d = isa::unpack_dma(w);
    const DmaError e = dma_check(d, kCoreHbmBytes);
    if (e != DmaError::kNone) fail(t[0].col, fmt::format("the DMA engines would refuse this descriptor ({})", dma_error_name(e)));
    list.entries.push_back(d);
    list.lines.push_back(line_ + 1);
  }

  // Each dma_list with list=NAME gets its list (defined before or after it).
  void resolve_list_refs() {
    for (const ListRef& r : list_refs_) {
      auto it = list_names_.find(r.name);
      if (it == list_names_.end()) {
        line_ = r.line;
        fail(r.col, fmt::format("unknown list '{}' (define it with .list {} ... .endlist)", r.name, r.name));
      }
      CoreInstr& in = prog_.queues[r.queue][r.index];
      in.list_ref = static_cast<int>(it->second);
      in.list.count = prog_.lists[it->second].entries.size();
    }
  }

  void directive_queue(const std::vector<Token>& t) {
    if (t.size() != 2) fail(t[0].col, "expected '.queue pe|act|dve|sp|cc'");
    for (int q = 0; q < isa::kNumQueue; ++q)
      if (t[1].text == isa::kQueueNames[q]) {
        queue_ = static_cast<isa::Queue>(q);
        return;
      }
    fail(t[1].col, fmt::format("expected a queue (pe, act, dve, sp, cc), found '{}'", t[1].text));
  }

  void define(const Token& name_tok, int64_t value) {
    const std::string& name = name_tok.text;
    if (name.empty() || !is_ident_start(name[0]) ||
        !std::all_of(name.begin(), name.end(), is_ident))
      fail(name_tok.col, fmt::format("expected a name, found '{}'", name));
    if (symbols_.front().count(name)) fail(name_tok.col, fmt::format("'{}' is already defined", name));
    symbols_.front()[name] = value;
  }

  void directive_equ(const std::vector<Token>& t) {
    if (t.size() != 3) fail(t[0].col, "expected '.equ NAME EXPR'");
    define(t[1], eval(t[2].text, t[2].col));
  }

  // `.image ADDR`: the program image's HBM address (model/core/image.h); once per program.
  void directive_image(const std::vector<Token>& t) {
    if (t.size() != 2) fail(t[0].col, "expected '.image ADDR'");
    if (prog_.image_addr) fail(t[0].col, fmt::format("the image is already placed at {}", prog_.image_loc.str()));
    const int64_t addr = eval(t[1].text, t[1].col);
    if (addr < 0 || static_cast<uint64_t>(addr) >= kCoreHbmBytes)
      fail(t[1].col, fmt::format("expected an HBM address 0..0x{:x}, found {}", kCoreHbmBytes - 1, addr));
    if (static_cast<uint64_t>(addr) % kImageAlign)
      fail(t[1].col, fmt::format("expected a multiple of {} (each stream starts on such a boundary), found 0x{:x}",
                                 kImageAlign, addr));
    prog_.image_addr = static_cast<uint64_t>(addr);
    prog_.image_loc = loc(t[0].col);
  }

  void directive_sem(const std::vector<Token>& t) {
    if (t.size() < 2 || t.size() > 3) fail(t[0].col, "expected '.sem NAME [INITIAL]'");
    if (next_sem_ >= kNumSemaphores)
      fail(t[1].col, fmt::format("too many semaphores: the core has {}", kNumSemaphores));
    int64_t init = 0;
    if (t.size() == 3) {
      init = eval(t[2].text, t[2].col);
      if (init < 0 || init > kMaxSemValue)
        fail(t[2].col, fmt::format("expected an initial value 0..{}, found {}", kMaxSemValue, init));
    }
    define(t[1], next_sem_);
    prog_.sem_names[next_sem_] = t[1].text;
    prog_.sem_init[next_sem_] = static_cast<uint32_t>(init);
    sems_[t[1].text] = next_sem_++;
  }

  static std::pair<std::string, std::string> split_kv(const Token& t) {
    const auto eq = t.text.find('=');
    if (eq == std::string::npos) return {t.text, ""};
    return {t.text.substr(0, eq), t.text.substr(eq + 1)};
  }

  void directive_tensor(const std::vector<Token>& t) {
    if (t.size() < 3) fail(t[0].col, "expected '.tensor NAME hbm|sbuf key=value ...'");
    TensorDecl d;
    d.name = t[1].text;
    d.loc = loc(t[0].col);
    if (t[2].text != "hbm" && t[2].text != "sbuf")
      fail(t[2].col, fmt::format("expected hbm or sbuf, found '{}'", t[2].text));
    d.hbm = t[2].text == "hbm";
    bool have_addr = false, have_shape = false;
    int shape_col = t[0].col, addr_col = t[0].col;
    std::string npy_file;  // init=file:PATH, read once the shape and type are known
    int npy_col = 0;
    for (size_t i = 3; i < t.size(); ++i) {
      auto [key, value] = split_kv(t[i]);
      const int vcol = t[i].col + static_cast<int>(key.size()) + 1;
      if (key == "output" && value.empty()) {
        d.output = true;
      } else if (key == "addr") {
        const int64_t addr = eval(value, vcol);
        if (addr < 0) fail(vcol, fmt::format("expected an address >= 0, found {}", addr));
        d.addr = static_cast<uint64_t>(addr);
        have_addr = true;
        addr_col = vcol;
      } else if (key == "partition" && !d.hbm) {
        const int64_t partition = eval(value, vcol);
        if (partition < 0 || partition >= kSbufPartitions)
          fail(vcol, fmt::format("expected a partition 0..{}, found {}", kSbufPartitions - 1, partition));
        d.partition = static_cast<int>(partition);
      } else if (key == "dtype") {
        d.dtype = dtype_value(value, vcol);
      } else if (key == "shape") {
        size_t start = 0;
        while (start <= value.size()) {
          size_t x = value.find('x', start);
          if (x == std::string::npos) x = value.size();
          const int64_t dim = eval(value.substr(start, x - start), vcol + static_cast<int>(start));
          if (dim <= 0 || dim > kMaxTensorDim)
            fail(vcol + static_cast<int>(start), fmt::format("expected a dimension 1..2^32, found {}", dim));
          d.shape.push_back(dim);
          start = x + 1;
        }
        have_shape = true;
        shape_col = vcol;
      } else if (key == "init") {
        if (value == "zero") d.init = TensorInit::kZero;
        else if (value == "random") d.init = TensorInit::kRandom;
        else if (value == "ramp") d.init = TensorInit::kRamp;
        else if (value.rfind("file:", 0) == 0 && value.size() > 5) {
          npy_file = value.substr(5);
          npy_col = vcol;
        } else {
          fail(vcol, fmt::format("expected init=zero|random|ramp|file:PATH.npy, found '{}'", value));
        }
      } else if (key == "seed") {
        d.seed = static_cast<uint64_t>(eval(value, vcol));
      } else {
        fail(t[i].col, fmt::format("unknown key '{}' (expected addr, {}dtype, shape, init, seed, output)",
                                   key, d.hbm ? "" : "partition, "));
      }
    }
    if (!have_addr) fail(t[0].col, fmt::format("tensor {}: addr= is required", d.name));
    if (!have_shape) fail(t[0].col, fmt::format("tensor {}: shape= is required", d.name));
    // The tensor's extent, overflow-checked, must lie inside the memory it names.
    const uint64_t limit = d.hbm ? kCoreHbmBytes : kSbufPartitionStride;
    uint64_t bytes = static_cast<uint64_t>(storage_bits(d.dtype) / 8);
    for (size_t i = d.hbm ? 0 : 1; i < d.shape.size(); ++i)
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d.shape[i]), &bytes) || bytes > limit)
        fail(shape_col, fmt::format("tensor {}: expected a shape of at most {} bytes{}, found more", d.name, limit,
                                    d.hbm ? "" : " per partition"));
    if (d.hbm && (d.addr > kCoreHbmBytes || bytes > kCoreHbmBytes - d.addr))
      fail(addr_col, fmt::format("tensor {}: bytes [{:#x}, {:#x}) leave the core's HBM window [0, {:#x})", d.name,
                                 d.addr, d.addr + bytes, kCoreHbmBytes));
    if (!d.hbm) {
      if (d.shape[0] > kSbufPartitions - d.partition)
        fail(t[0].col, fmt::format("tensor {}: partitions [{}, {}) leave the {} SBUF partitions",
                                   d.name, d.partition, d.partition + d.shape[0], kSbufPartitions));
      if (d.addr > kSbufPartitionStride || bytes > kSbufPartitionStride - d.addr)
        fail(t[0].col, fmt::format("tensor {}: bytes [{}, {}) leave an SBUF partition ({} bytes)",
                                   d.name, d.addr, d.addr + d.bytes(), kSbufPartitionStride));
    }
    if (!npy_file.empty()) {
      // A relative path is the program's folder's.
      std::filesystem::path path(npy_file);
      if (path.is_relative()) path = std::filesystem::path(file_).parent_path() / path;
      try {
        load_tensor_npy(d, path.string());
      } catch (const AsmError&) {
        throw;
      } catch (const Error& e) {
        fail(npy_col, e.what());
      }
    }
    define(t[1], static_cast<int64_t>(d.addr));
    prog_.tensors.push_back(d);
  }

  SourceLoc loc(int col) const {
    SourceLoc l;
    l.file = file_;
    l.line = line_ + 1;
    l.col = col;
    if (!label_.empty() && queue_ && label_queue_ == queue_) {  // a label before any .queue names nothing
      l.label = label_;
      l.label_offset = static_cast<int>(prog_.queues[static_cast<int>(*queue_)].size() - label_index_);
    }
    return l;
  }

  // ---- named values ------------------------------------------------------------------------
  int64_t value_or(const std::string& v, int col, const std::function<int64_t(const std::string&)>& named) {
    if (!v.empty() && is_ident_start(v[0]) && std::all_of(v.begin(), v.end(), is_ident) && !lookup(v)) {
      try {
        return named(v);
      } catch (const Error& e) {
        fail(col, e.what());
      }
    }
    return eval(v, col);
  }
  DType dtype_value(const std::string& v, int col) {
    const int64_t code = value_or(v, col, [](const std::string& s) { return static_cast<int64_t>(parse_dtype(s)); });
    if (code < 0 || code >= isa::kNumDType)
      fail(col, fmt::format("expected a type ({}), found {}", dtype_list(), code));
    return static_cast<DType>(code);
  }

  // ---- instructions ------------------------------------------------------------------------
  struct Pending {  // s0/s1 given as a plain number: FP32 or int32 once the class is known
    bool set = false;
    double value = 0;
    bool is_float_literal = false;
    int col = 0;
  };
  // memset's and affine_select's `value` (bits once dtype out is known) and the NKI-style
  // `pattern` of iota and affine_select (its counts checked against dst's).
  struct PendingVe {
    Pending value;
    bool value_bits = false;
    std::vector<std::pair<int64_t, int64_t>> pattern;  // [step, count], outermost first
    int pattern_col = 0;
  };

  void instruction(const std::vector<Token>& t) {
    if (!queue_) fail(t[0].col, "an instruction before any '.queue'");
    const std::string& mn = t[0].text;
    CoreInstr in;
    if (mn == "sem_wait" || mn == "sem_signal" || mn == "sem_increment" || mn == "sem_set") {
      sem_mnemonic(t, in);
      return push(in, t[0].col);
    }
    if (mn == "nc_matmul") return nc_matmul(t);
    // dma_transpose: NKI's name for a transposing HBM -> SBUF dma_copy.
    const bool dma_transpose = mn == "dma_transpose";
    const auto* info = opcode_info(dma_transpose ? "dma_copy" : mn);
    if (!info) fail(t[0].col, fmt::format("unknown instruction '{}'", mn));
    if (!queue_allows(*queue_, info->opcode))
      fail(t[0].col, fmt::format("{} cannot go in the {} queue (it belongs to {})", mn,
                                 queue_name(*queue_), queues_of(*info)));
    in = default_instr(info->opcode);
    isa::Word w = encode(in);
    Pending s[2];
    PendingVe pv;
    if (dma_transpose) set_field(w, *info, "transpose", 1, t[0].col);
    std::optional<ListRef> ref;
    for (size_t i = 1; i < t.size(); ++i) {
      if (info->format == isa::Format::kList && split_kv(t[i]).first == "list") {
        const std::string name = split_kv(t[i]).second;
        ref = ListRef{static_cast<int>(*queue_), prog_.queues[static_cast<int>(*queue_)].size(), name, line_,
                      t[i].col + 5};
        continue;
      }
      argument(t[i], *info, w, in, s, pv);
    }
    if (ref) {
      for (size_t i = 1; i < t.size(); ++i) {
        const std::string key = split_kv(t[i]).first;
        if (key == "list_addr" || key == "count")
          fail(t[i].col, fmt::format("'{}' with list=: the list's place and length come from the image layout", key));
      }
      list_refs_.push_back(*ref);
    }
    if (info->format == isa::Format::kVe) {
      resolve_scalars(w, s);
      resolve_value_and_pattern(w, *info, pv);
    }
    finish(w, in, t[0].col);
  }

  static std::string queues_of(const isa::OpcodeInfo& info) {
    std::string s;
    for (int q = 0; q < isa::kNumQueue; ++q)
      if (info.queue_mask >> q & 1) s += (s.empty() ? "" : ", ") + std::string(isa::kQueueNames[q]);
    return s;
  }

  int sem_ref(const std::string& name, int col) {
    auto it = sems_.find(name);
    if (it != sems_.end()) return it->second;
    if (name.size() > 1 && name[0] == 's' && std::all_of(name.begin() + 1, name.end(), ::isdigit)) {
      int s = 0;
      const auto [end, ec] = std::from_chars(name.data() + 1, name.data() + name.size(), s);
      if (ec != std::errc() || s >= kNumSemaphores)
        fail(col, fmt::format("expected a semaphore s0..s{}, found '{}'", kNumSemaphores - 1, name));
      return s;
    }
    if (!name.empty() && is_ident_start(name[0]) && std::all_of(name.begin(), name.end(), is_ident) && !lookup(name))
      fail(col, fmt::format("expected a semaphore (declared with .sem, or s0..s{}), found '{}'", kNumSemaphores - 1, name));
    const int64_t s = eval(name, col);  // an expression over .sem names, e.g. dma0+e
    if (s < 0 || s >= kNumSemaphores)
      fail(col, fmt::format("expected a semaphore (declared with .sem, s0..s{}, or an expression), found '{}' = {}",
                            kNumSemaphores - 1, name, s));
    return static_cast<int>(s);
  }

  // "NAME>=EXPR" (wait), "NAME+=EXPR" or "NAME=EXPR" (signal)
  void header_arg(const std::string& key, const std::string& v, int col, CoreInstr& in) {
    if (key == "tag") {
      const int64_t tag = eval(v, col);
      if (tag < 0 || tag > 255) fail(col, fmt::format("expected a tag 0..255, found {}", tag));
      in.tag = static_cast<uint8_t>(tag);
      return;
    }
    const bool wait = key == "wait";
    const char* op = wait ? ">=" : v.find("+=") != std::string::npos ? "+=" : "=";
    const size_t at = v.find(op);
    if (at == std::string::npos || at == 0)
      fail(col, fmt::format("expected {}=SEM{}VALUE, found '{}'", key, wait ? ">=" : "+= or =", v));
    const int sem = sem_ref(v.substr(0, at), col);
    const size_t vpos = at + std::strlen(op);
    const int64_t value = eval(v.substr(vpos), col + static_cast<int>(vpos));
    if (value < 0 || value > kMaxSemValue)
      fail(col + static_cast<int>(vpos), fmt::format("expected a semaphore value 0..{}, found {}", kMaxSemValue, value));
    if (wait) {
      in.wait_en = true;
      in.wait_sem = sem;
      in.wait_value = static_cast<uint32_t>(value);
    } else {
      in.sig_op = op[0] == '+' ? isa::SigOp::kIncrement : isa::SigOp::kSet;
      in.sig_sem = sem;
      in.sig_value = static_cast<uint32_t>(value);
    }
  }

  void sem_mnemonic(const std::vector<Token>& t, CoreInstr& in) {
    const std::string& mn = t[0].text;
    if (t.size() < 2) fail(t[0].col, fmt::format("expected an operand after {}", mn));
    const Token& a = t[1];
    if (mn == "sem_wait") header_arg("wait", a.text, a.col, in);
    else if (mn == "sem_signal") header_arg("signal", a.text + "+=1", a.col, in);
    else if (mn == "sem_increment") {
      if (a.text.find("+=") == std::string::npos) fail(a.col, fmt::format("expected SEM+=VALUE, found '{}'", a.text));
      header_arg("signal", a.text, a.col, in);
    } else {
      if (a.text.find("+=") != std::string::npos || a.text.find('=') == std::string::npos)
        fail(a.col, fmt::format("expected SEM=VALUE, found '{}'", a.text));
      header_arg("signal", a.text, a.col, in);
    }
    for (size_t i = 2; i < t.size(); ++i) {
      auto [key, value] = split_kv(t[i]);
      if (key != "tag" && !(key == "wait" && mn != "sem_wait") && !(key == "signal" && mn == "sem_wait"))
        fail(t[i].col, fmt::format("unexpected '{}' after {}", t[i].text, mn));
      header_arg(key, value, t[i].col + static_cast<int>(key.size()) + 1, in);
    }
  }

  const isa::FieldInfo* field(const isa::OpcodeInfo& info, const std::string& name) const {
    const auto& f = isa::kFormats[static_cast<int>(info.format)];
    for (int i = 0; i < f.field_count; ++i)
      if (name == f.fields[i].name) return &f.fields[i];
    return nullptr;
  }

  void set_field(isa::Word& w, const isa::OpcodeInfo& info, const std::string& name, int64_t v, int col) {
    const auto* f = field(info, name);
    if (!f) fail(col, fmt::format("{} has no field '{}'", info.name, name));
    const bool ok = f->is_signed ? v >= -(int64_t{1} << (f->width - 1)) && v < (int64_t{1} << (f->width - 1))
                                 : v >= 0 && v < (int64_t{1} << f->width);
    if (!ok)
      fail(col, fmt::format("field {}: expected {} {}-bit value, found {}", name,
                            f->is_signed ? "a signed" : "an unsigned", f->width, v));
    isa::set_bits(w, f->lsb, f->width, static_cast<uint64_t>(v));
  }

  void argument(const Token& tok, const isa::OpcodeInfo& info, isa::Word& w, CoreInstr& in, Pending* s, PendingVe& pv) {
    auto [key, v] = split_kv(tok);
    const int col = tok.col + static_cast<int>(key.size()) + 1;
    if (v.empty()) fail(tok.col, fmt::format("expected key=value, found '{}'", tok.text));
    if (key == "wait" || key == "signal" || key == "tag") return header_arg(key, v, col, in);
    const bool ve = info.format == isa::Format::kVe;
    if (key == "dtype" || key == "in0" || key == "in1" || key == "out") {
      const int64_t code = static_cast<int64_t>(dtype_value(v, col));
      if (ve && key == "dtype") {
        for (const char* f : {"in0", "in1", "out"}) set_field(w, info, f, code, col);
        return;
      }
      return set_field(w, info, key, code, col);
    }
    if (ve && (key == "op0" || key == "op1"))
      return set_field(w, info, key, value_or(v, col, [](const std::string& n) { return static_cast<int64_t>(parse_alu_op(n)); }), col);
    if (ve && (key == "act_func" || key == "func"))
      return set_field(w, info, "act_func", value_or(v, col, [](const std::string& n) { return static_cast<int64_t>(parse_act_func(n)); }), col);
    if (ve && (key == "src0" || key == "src1" || key == "dst")) {
      std::string e = v;
      int ecol = col;
      int64_t space = 0;
      for (const char* p : {"sbuf:", "psum:"})
        if (e.rfind(p, 0) == 0) {
          space = p[0] == 'p';
          e = e.substr(5);
          ecol += 5;
        }
      set_field(w, info, key + "_space", space, col);
      return set_field(w, info, key + "_addr", eval(e, ecol), ecol);
    }
    if (ve && (key == "src0_ap" || key == "src1_ap" || key == "dst_ap")) return access_pattern(key.substr(0, key.size() - 3), v, col, info, w);
    if (ve && (key == "cmp" || key == "cmp_op"))
      return set_field(w, info, "cmp_op", value_or(v, col, [](const std::string& n) {
                         return static_cast<int64_t>(value_of<isa::CmpOp>(isa::kCmpOpNames, n, "comparison"));
                       }), col);
    if (ve && key == "value") {
      pv.value_bits = v.rfind("bits:", 0) == 0;
      if (pv.value_bits) {
        const int64_t bits = eval(v.substr(5), col + 5);
        if (bits < 0 || bits > 0xFFFFFFFFll) fail(col + 5, fmt::format("expected 32 bits, found {}", bits));
        pv.value = Pending{true, static_cast<double>(bits), false, col};
        return;
      }
      return scalar_literal(v, col, pv.value);
    }
    if (ve && key == "pattern") {
      pv.pattern = bracket_pairs(v, col, "[[step,count],...]");
      pv.pattern_col = col;
      if (pv.pattern.empty() || pv.pattern.size() > kVeDims)
        fail(col, fmt::format("expected 1 to {} [step,count] pairs, found {}", kVeDims, pv.pattern.size()));
      return;
    }
    if (ve && (key == "s0" || key == "s1" || key == "scale" || key == "bias")) {
      const std::string f = key == "scale" ? "s0" : key == "bias" ? "s1" : key;
      return scalar(f, v, col, info, w, s[f == "s1"]);
    }
    if (info.format == isa::Format::kDma && key == "dir") {
      if (v != "hbm_to_sbuf" && v != "sbuf_to_hbm") fail(col, fmt::format("expected dir=hbm_to_sbuf|sbuf_to_hbm, found '{}'", v));
      return set_field(w, info, "to_hbm", v == "sbuf_to_hbm", col);
    }
    if (info.format == isa::Format::kCc && (key == "group" || key == "algo")) {
      std::string name = v;  // NCCL-style names may use '-' for the ISA's '_' (torus2d-split)
      std::replace(name.begin(), name.end(), '-', '_');
      const auto find = [&](const auto& names) -> int64_t {
        for (size_t i = 0; i < names.size(); ++i)
          if (names[i] == name) return static_cast<int64_t>(i);
        return -1;
      };
      const int64_t code = key == "group" ? find(isa::kCcGroupNames) : find(isa::kCcAlgoNames);
      return set_field(w, info, key, code >= 0 ? code : eval(v, col), col);
    }
    if (info.format == isa::Format::kTe && key == "sparsity") {
      static const std::map<std::string, int64_t> names{{"dense", 0}, {"4:8", 1}, {"4:12", 2}, {"4:16", 3}};
      auto it = names.find(v);
      return set_field(w, info, key, it != names.end() ? it->second : eval(v, col), col);
    }
    if (v == "true" || v == "false") return set_field(w, info, key, v == "true", col);
    if (!field(info, key)) fail(tok.col, fmt::format("{} has no field '{}'", info.name, key));
    set_field(w, info, key, eval(v, col), col);
  }

  // [[a, b], ...] as pairs, in the order written.
  std::vector<std::pair<int64_t, int64_t>> bracket_pairs(const std::string& v, int col, const char* form) {
    if (v.size() < 2 || v.front() != '[' || v.back() != ']')
      fail(col, fmt::format("expected {}, found '{}'", form, v));
    std::vector<std::pair<int64_t, int64_t>> dims;
    size_t pos = 1;
    while (pos < v.size() - 1) {
      if (v[pos] == ',' || v[pos] == ' ') { ++pos; continue; }
      if (v[pos] != '[') fail(col + static_cast<int>(pos), fmt::format("expected '[' of a pair of {}", form));
      const size_t close = v.find(']', pos);
      const size_t comma = v.find(',', pos);
      if (close == std::string::npos || comma == std::string::npos || comma > close)
        fail(col + static_cast<int>(pos), fmt::format("expected a pair of {}", form));
      const int64_t first = eval(v.substr(pos + 1, comma - pos - 1), col + static_cast<int>(pos) + 1);
      const int64_t second = eval(v.substr(comma + 1, close - comma - 1), col + static_cast<int>(comma) + 1);
      dims.emplace_back(first, second);
      pos = close + 1;
    }
    return dims;
  }

  // [[stride, count], ...]: outermost first, innermost last (NKI's order), up to 4 dimensions.
  void access_pattern(const std::string& op, const std::string& v, int col, const isa::OpcodeInfo& info, isa::Word& w) {
    const auto dims = bracket_pairs(v, col, "[[stride,count],...]");
    if (dims.empty() || dims.size() > kVeDims)
      fail(col, fmt::format("expected 1 to {} [stride,count] pairs, found {}", kVeDims, dims.size()));
    for (int d = 0; d < kVeDims; ++d) {
      const bool given = d < static_cast<int>(dims.size());
      const auto& [stride, count] = given ? dims[dims.size() - 1 - d] : std::pair<int64_t, int64_t>{0, 1};
      set_field(w, info, fmt::format("{}_stride{}", op, d), stride, col);
      set_field(w, info, fmt::format("{}_count{}", op, d), count, col);
    }
  }

  void scalar(const std::string& f, const std::string& v, int col, const isa::OpcodeInfo& info, isa::Word& w, Pending& p) {
    if (v.rfind("bits:", 0) != 0) set_field(w, info, f + "_per_partition", 0, col);
    if (v.rfind("sbuf:", 0) == 0) {
      set_field(w, info, f + "_per_partition", 1, col);
      return set_field(w, info, f, eval(v.substr(5), col + 5), col + 5);
    }
    if (v.rfind("bits:", 0) == 0) {
      const int64_t bits = eval(v.substr(5), col + 5);
      if (bits < 0 || bits > 0xFFFFFFFFll) fail(col + 5, fmt::format("expected 32 bits, found {}", bits));
      return set_field(w, info, f, bits, col + 5);
    }
    scalar_literal(v, col, p);
  }

  // A number for a scalar operand: a float literal, or an integer expression.
  void scalar_literal(const std::string& v, int col, Pending& p) {
    char* end = nullptr;
    const double d = std::strtod(v.c_str(), &end);
    const bool literal = end && *end == '\0' && !v.empty();
    p.set = true;
    p.col = col;
    if (literal && v.find_first_of(".eEni") != std::string::npos && v.rfind("0x", 0) != 0) {
      p.is_float_literal = true;
      p.value = d;
    } else {
      p.is_float_literal = false;
      p.value = static_cast<double>(eval(v, col));
    }
  }

  void resolve_scalars(isa::Word& w, const Pending* s) {
    const auto f = isa::unpack_ve(w);
    const bool integer = is_bitwise(f.op0) || is_bitwise(f.op1);
    const isa::OpcodeInfo& info = *opcode_info(isa::Opcode::kTensorScalar);
    for (int i = 0; i < 2; ++i) {
      if (!s[i].set) continue;
      const char* name = i ? "s1" : "s0";
      int64_t bits;
      if (integer) {
        if (s[i].is_float_literal) fail(s[i].col, fmt::format("{}: expected an integer (the instruction uses a bitwise op), found a float", name));
        bits = static_cast<int64_t>(static_cast<uint32_t>(static_cast<int32_t>(s[i].value)));
      } else {
        bits = float_to_bits(static_cast<float>(s[i].value));
      }
      set_field(w, info, name, bits, s[i].col);
    }
  }

  // memset: a number becomes the element of dtype out (an integer in range, or a float that
  // stays finite unless written as inf/nan); affine_select: an FP32 value. pattern: the steps,
  // with counts that must be dst's.
  void resolve_value_and_pattern(isa::Word& w, const isa::OpcodeInfo& info, const PendingVe& pv) {
    const auto f = isa::unpack_ve(w);
    const bool memset = info.opcode == isa::Opcode::kMemset;
    const bool affine = info.opcode == isa::Opcode::kIota || info.opcode == isa::Opcode::kAffineSelect;
    if (pv.value.set) {
      // Raw bits go into any vector word (a disassembly round-trips); a number needs the meaning
      // memset and affine_select give the field.
      if (!pv.value_bits && !memset && info.opcode != isa::Opcode::kAffineSelect)
        fail(pv.value.col, fmt::format("{} has no value to convert a number for (memset and affine_select do; "
                                       "value=bits:0x... sets the field's bits)", info.name));
      uint32_t bits = static_cast<uint32_t>(pv.value.value);
      if (!pv.value_bits && !memset) {
        bits = float_to_bits(static_cast<float>(pv.value.value));
      } else if (!pv.value_bits && !is_float(f.out)) {
        const int n = storage_bits(f.out);
        const double lo = -std::ldexp(1.0, n - 1), hi = std::ldexp(1.0, n - 1) - 1;
        if (pv.value.is_float_literal && pv.value.value != std::floor(pv.value.value))
          fail(pv.value.col, fmt::format("value: expected an integer for {}, found {}", dtype_name(f.out), pv.value.value));
        if (pv.value.value < lo || pv.value.value > hi)
          fail(pv.value.col, fmt::format("value: {} does not fit {} [{}, {}]", pv.value.value, dtype_name(f.out), lo, hi));
        bits = static_cast<uint32_t>(static_cast<int64_t>(pv.value.value)) & storage_mask(f.out);
      } else if (!pv.value_bits) {
        const uint32_t fp32 = float_to_bits(static_cast<float>(pv.value.value));
        bits = from_fp32(fp32, f.out, CastMode{});
        const bool special = !std::isfinite(pv.value.value);
        const ValueClass c = classify(f.out, bits);
        if (!special && (c == ValueClass::kInf || c == ValueClass::kNan))
          fail(pv.value.col, fmt::format("value: {} overflows {}", pv.value.value, dtype_name(f.out)));
      }
      set_field(w, info, "value", bits, pv.value.col);
    }
    if (!pv.pattern.empty()) {
      if (!affine) fail(pv.pattern_col, fmt::format("{} has no pattern (iota and affine_select do)", info.name));
      for (int d = 0; d < kVeDims; ++d) {
        const bool given = d < static_cast<int>(pv.pattern.size());
        const auto [step, count] = given ? pv.pattern[pv.pattern.size() - 1 - d] : std::pair<int64_t, int64_t>{0, 1};
        if (count != f.dst.count[d])
          fail(pv.pattern_col, fmt::format("pattern: dimension {} counts {}, but dst_ap's counts {} (they must agree)",
                                           d, count, f.dst.count[d]));
        set_field(w, info, fmt::format("step{}", d), step, pv.pattern_col);
      }
    }
  }

  void finish(const isa::Word& w, CoreInstr& hdr, int col) {
    CoreInstr in;
    std::string why;
    const auto err = decode(w, *queue_, &in, &why);
    if (err != DecodeError::kNone) fail(col, fmt::format("{}: {}", decode_error_name(err), why));
    in.wait_en = hdr.wait_en;
    in.wait_sem = hdr.wait_sem;
    in.wait_value = hdr.wait_value;
    in.sig_op = hdr.sig_op;
    in.sig_sem = hdr.sig_sem;
    in.sig_value = hdr.sig_value;
    in.tag = hdr.tag;
    in.te.tag = in.ve.tag = hdr.tag;
    check_engine(in, col);
    push(in, col);
  }

  // The engines' own checks that do not depend on state: a program the engines would refuse
  // is rejected here, with the engine's reason.
  void check_engine(const CoreInstr& in, int col) {
    switch (format_of(in.opcode)) {
      case isa::Format::kVe: {
        VeConfig cfg;
        cfg.scalar_engine = in.opcode == isa::Opcode::kActivation;
        std::string why;
        const VeError e = ve_check(in.ve, cfg, &why);
        if (e != VeError::kNone) fail(col, fmt::format("the {} engine would refuse this ({}): {}",
                                                      cfg.scalar_engine ? "scalar" : "vector", ve_error_name(e), why));
        break;
      }
      case isa::Format::kTe: {
        const TeError e = te_.check(in.te);
        const bool stateful = e == TeError::kNoStationary || e == TeError::kKMismatch || e == TeError::kModeMismatch;
        if (e != TeError::kNone && !stateful)
          fail(col, fmt::format("the tensor engine would refuse this ({}): {}", te_error_name(e), describe(in.te)));
        break;
      }
      case isa::Format::kDma: {
        const DmaError e = dma_check(in.dma, kCoreHbmBytes);
        if (e != DmaError::kNone) fail(col, fmt::format("the DMA engines would refuse this descriptor ({})", dma_error_name(e)));
        break;
      }
      case isa::Format::kList: {  // (list=NAME: count and place come from the layout later)
        const DmaError e = dma_list_check(in.list, kCoreHbmBytes);
        if (e != DmaError::kNone) fail(col, fmt::format("the core would refuse this list ({})", dma_error_name(e)));
        break;
      }
      default: break;
    }
  }

  void push(CoreInstr in, int col) {
    auto& queue = prog_.queues[static_cast<int>(*queue_)];
    in.loc = loc(col);
    queue.push_back(std::move(in));
  }

  // nc_matmul: a load_stationary and a multiply_moving in one line. The wait goes on the LS,
  // the signal on the MM.
  void nc_matmul(const std::vector<Token>& t) {
    if (queue_ != isa::Queue::kPe) fail(t[0].col, fmt::format("nc_matmul cannot go in the {} queue (it belongs to pe)", queue_name(*queue_)));
    CoreInstr ls, mm;
    ls.opcode = isa::Opcode::kLoadStationary;
    mm.opcode = isa::Opcode::kMultiplyMoving;
    isa::Word wl = encode(ls), wm = encode(mm);
    const auto& li = *opcode_info(isa::Opcode::kLoadStationary);
    std::optional<int64_t> stationary_type, moving_type;
    int type_col = t[0].col;
    for (size_t i = 1; i < t.size(); ++i) {
      auto [key, v] = split_kv(t[i]);
      const int col = t[i].col + static_cast<int>(key.size()) + 1;
      if (key == "wait") { header_arg(key, v, col, ls); continue; }
      if (key == "signal") { header_arg(key, v, col, mm); continue; }
      if (key == "tag") { header_arg(key, v, col, ls); header_arg(key, v, col, mm); continue; }
      if (key == "stationary") { set_field(wl, li, "sbuf_addr", eval(v, col), col); continue; }
      if (key == "moving") { set_field(wm, li, "sbuf_addr", eval(v, col), col); continue; }
      if (key == "stationary_stride") { set_field(wl, li, "sbuf_stride", eval(v, col), col); continue; }
      if (key == "moving_stride") { set_field(wm, li, "sbuf_stride", eval(v, col), col); continue; }
      if (key == "stride") {
        set_field(wl, li, "sbuf_stride", eval(v, col), col);
        set_field(wm, li, "sbuf_stride", eval(v, col), col);
        continue;
      }
      if (key == "dtype") { stationary_type = static_cast<int64_t>(dtype_value(v, col)); type_col = col; continue; }
      if (key == "moving_dtype") { moving_type = static_cast<int64_t>(dtype_value(v, col)); type_col = col; continue; }
      const bool ls_only = key == "m" || key == "tag_addr";
      const bool mm_only = key == "n" || key == "psum_bank" || key == "psum_offset" || key == "accumulate";
      PendingVe unused;
      if (!mm_only) argument(t[i], li, wl, ls, nullptr, unused);
      if (!ls_only) argument(t[i], li, wm, mm, nullptr, unused);
    }
    if (stationary_type) set_field(wl, li, "dtype", *stationary_type, type_col);
    if (moving_type || stationary_type) set_field(wm, li, "dtype", moving_type ? *moving_type : *stationary_type, type_col);
    finish(wl, ls, t[0].col);
    finish(wm, mm, t[0].col);
  }

  struct ListRef {
    int queue;
    size_t index;
    std::string name;
    int line, col;
  };
  std::string file_;
  const ProgramText& text_;
  std::map<std::string, size_t> list_names_;  // -> Program::lists
  std::optional<size_t> open_list_;           // the .list being written
  std::vector<ListRef> list_refs_;
  int line_ = 0;
  Program prog_;
  std::vector<std::map<std::string, int64_t>> symbols_;
  std::map<std::string, int> sems_;
  std::set<std::string> labels_;
  int next_sem_ = 0;
  int rept_depth_ = 0;
  int block_depth_ = 0;
  uint64_t lines_visited_ = 0;
  std::optional<isa::Queue> queue_;
  std::string label_;
  std::optional<isa::Queue> label_queue_;
  size_t label_index_ = 0;
  TensorEngine te_;
};

}  // namespace

Symbols spmd_symbols(int chip, int core, int chips, int cores) {
  return {{"CHIP", chip}, {"CORE", core}, {"CHIPS", chips}, {"CORES", cores}};
}

ProgramText::ProgramText(std::string text, std::string file) : file_(std::move(file)), text_(std::move(text)) {
  // Lines as std::getline gives them; blocks matched as a forward scan from each opening line
  // would (the last .else at its depth; .if and .rept nest independently).
  for (size_t pos = 0; pos < text_.size();) {
    const size_t nl = std::min(text_.find('\n', pos), text_.size());
    lines_.push_back({pos, nl - pos});
    pos = nl + 1;
  }
  blocks_.assign(lines_.size(), Block{});
  std::vector<int> ifs, repts;
  for (int i = 0; i < lines(); ++i) {
    const std::string_view w = first_word(line(i));
    if (w == ".if") ifs.push_back(i);
    else if (w == ".else" && !ifs.empty()) blocks_[static_cast<size_t>(ifs.back())].middle = i;
    else if (w == ".endif" && !ifs.empty()) blocks_[static_cast<size_t>(ifs.back())].end = i, ifs.pop_back();
    else if (w == ".rept") repts.push_back(i);
    else if (w == ".endr" && !repts.empty()) blocks_[static_cast<size_t>(repts.back())].end = i, repts.pop_back();
  }
}

ProgramText ProgramText::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the program", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ProgramText(std::move(ss).str(), path);
}

Program assemble(const ProgramText& text, const Symbols& predefined) { return Assembler(text, predefined).run(); }

Program assemble(std::string_view text, const std::string& file, const Symbols& predefined) {
  return assemble(ProgramText(std::string(text), file), predefined);
}

Program assemble_file(const std::string& path, const Symbols& predefined) {
  return assemble(ProgramText::read(path), predefined);
}

}  // namespace ncore::model
