#include "codegen/regions.h"

#include <algorithm>
#include <initializer_list>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "codegen/emit.h"
#include "codegen/group_memory.h"
#include "codegen/rewrite.h"
#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

using Tokens = std::vector<Token>;

// The barrier every thread of a group meets: Metal's threadgroup_barrier (any memory flags) and
// CUDA's __syncthreads.
bool is_group_barrier(std::string_view name, Dialect dialect) {
  return dialect == Dialect::Metal ? name == "threadgroup_barrier" : name == "__syncthreads";
}

// Type words a loop header may use to declare its counter.
bool is_type_word(std::string_view word) { return word == "auto" || names_builtin_type(word); }

// The variables a statement at the top of a region declares.
struct Declaration {
  std::vector<std::pair<std::string_view, size_t>> names;  // and where each stands
  size_t type_begin;
  // "[specifiers] type [*] a [= x], b [= y]...;": no reference, array or deduced type, so that
  // dropping the type leaves assignments to per-thread slots.
  bool simple;
};

class Splitter {
 public:
  Splitter(const KernelSpec& spec, const std::vector<std::string>& uniform,
           const WaitingHelpers& names, bool interchange)
      : interchange_(interchange),
        t_(spec.source_tokens),
        dialect_(spec.dialect),
        uniform_(uniform.begin(), uniform.end()),
        names_(names) {
    // What each region computes again for its thread: the index variables the body reads.
    for (const std::string& a : spec.attributes) thread_names_.insert(a);
    if (dialect_ == Dialect::Cuda) {
      for (const CudaBuiltin& b : kCudaBuiltins) thread_names_.insert(b.name);
    }
    for (size_t k = 0; k < t_.size(); ++k) {
      if (t_[k].kind == TokenKind::Identifier) occurrences_[t_[k].text].push_back(k);
    }
  }

  RegionPlanning plan() {
    for (size_t k = 0; k < t_.size(); ++k) {
      const Token& tk = t_[k];
      // Macros could hide barriers or declarations; #pragma lines only hint.
      if (tk.kind == TokenKind::Directive) {
        const Token* word = next_significant(t_, k);
        if (!word || word->text != "pragma") {
          return refused(tk.line, "a preprocessor directive could hide a wait");
        }
      }
      if (tk.kind == TokenKind::Identifier && tk.text == "goto") {
        return refused(tk.line, "goto could jump past a wait");
      }
    }
    if (!split(0, t_.size(), 0)) return refused(0, "");
    for (size_t p = 0; p < plan_.pieces.size(); ++p) {
      const RegionPlan::Piece::Kind kind = plan_.pieces[p].kind;
      if (kind == RegionPlan::Piece::Kind::Operation) operations_.push_back(p);
      if (kind == RegionPlan::Piece::Kind::Region || kind == RegionPlan::Piece::Kind::LoopBegin) {
        text_order_.push_back(p);
      }
    }
    plan_.operations = !operations_.empty();
    if (!find_declarations() || !find_returns()) return refused(0, "");
    return {std::move(plan_), {}};
  }

 private:
  // No plan, for the reason first given (refuse), or else |why| at |line|.
  RegionPlanning refused(int line, const std::string& why) {
    if (!why.empty()) refuse(line, why);
    return {std::nullopt, refusal_};
  }

  // Notes why the body cannot be split (the first reason given counts) and returns false.
  bool refuse(int line, const std::string& why) {
    if (refusal_.empty()) refusal_ = "line " + std::to_string(line) + ": " + why;
    return false;
  }

  // Whether the token at |k| starts a statement of the level that begins at |begin|.
  bool starts_statement(size_t k, size_t begin) const {
    const size_t p = index_before(t_, k);
    return p == t_.size() || p < begin || is_one_of(t_[p].text, {";", "{", "}"});
  }

  bool waits_within(size_t begin, size_t end) const {
    for (size_t k = begin; k < end; ++k) {
      if (is_waiting_call(t_, k, dialect_, names_)) return true;
    }
    return false;
  }

  void add_region(size_t begin, size_t end, bool in_loop) {
    for (size_t k = begin; k < end; ++k) {
      if (is_significant(t_[k])) {
        plan_.pieces.push_back({RegionPlan::Piece::Kind::Region, begin, end});
        in_loop_.push_back(in_loop);
        return;
      }
    }
  }

  // The tokens that are identifier |name|, in order.
  const std::vector<size_t>& occurrences(std::string_view name) const {
    static const std::vector<size_t> kNone;
    const auto found = occurrences_.find(name);
    return found == occurrences_.end() ? kNone : found->second;
  }

  // Whether [begin, end) assigns to |name|, steps it or takes its address.
  bool written_within(std::string_view name, size_t begin, size_t end) const {
    const std::vector<size_t>& all = occurrences(name);
    for (auto at = std::lower_bound(all.begin(), all.end(), begin); at != all.end() && *at < end;
         ++at) {
      const size_t k = *at;
      if (is_member_access(prev_significant(t_, k))) continue;
      const Token* before = prev_significant(t_, k);
      const size_t next = index_after(t_, k);
      const std::string_view after = next < end ? t_[next].text : std::string_view();
      const size_t next2 = next < end ? index_after(t_, next) : end;
      if ((before && is_one_of(before->text, {"++", "--", "&"})) ||
          is_one_of(after, {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "++", "--"}) ||
          (is_one_of(after, {"&", "|", "^"}) && next2 < end && t_[next2].text == "=")) {
        return true;
      }
    }
    return false;
  }

  // Every identifier of the loop header [begin, end) is uniform, a type word, or a name the
  // header declares, which the loop's body [body, body_end) leaves to the header to change:
  // the group runs the header once per iteration, the body once per thread.
  bool uniform_header(size_t begin, size_t end, size_t body, size_t body_end) const {
    std::unordered_set<std::string_view> declared;
    for (size_t k = begin; k < end; ++k) {
      const Token& tk = t_[k];
      if (tk.kind != TokenKind::Identifier || k == begin) continue;
      const Token* before = prev_significant(t_, k);
      if (is_member_access(before) || is_type_word(tk.text) ||
          is_one_of(tk.text, {"true", "false", "sizeof"})) {
        continue;
      }
      if (before && before->kind == TokenKind::Identifier && is_type_word(before->text)) {
        declared.insert(tk.text);
        continue;
      }
      if (declared.count(tk.text) || uniform_.count(tk.text)) continue;
      return false;
    }
    for (std::string_view name : declared) {
      if (written_within(name, body, body_end)) return false;
    }
    return true;
  }

  // Whether [begin, end) chooses between paths by a value: an if, a switch or a ?:.
  bool branches_within(size_t begin, size_t end) const {
    for (size_t k = begin; k < end; ++k) {
      if (is_one_of(t_[k].text, {"if", "switch", "?"})) return true;
    }
    return false;
  }

  // Whether [begin, end) may leave a loop's iteration or the kernel early: break, continue,
  // return or goto anywhere in it (which would leave the group's loop, not the thread's).
  bool leaves_early(size_t begin, size_t end) const {
    for (size_t k = begin; k < end; ++k) {
      if (t_[k].kind == TokenKind::Identifier &&
          is_one_of(t_[k].text, {"break", "continue", "return", "goto"})) {
        return true;
      }
    }
    return false;
  }

  // Whether a break or continue in the loop body [begin, end) belongs to that loop: one in a loop
  // nested in it does not (its statement is skipped), nor does a break in a switch (whose body
  // is scanned for continue alone). With |breaks| false, only a continue counts.
  bool breaks_out(size_t begin, size_t end, bool breaks = true) const {
    for (size_t k = begin; k < end; k = index_after(t_, k)) {
      const Token& tk = t_[k];
      if (tk.kind != TokenKind::Identifier) continue;
      if (tk.text == "continue" || (breaks && tk.text == "break")) return true;
      if (!is_one_of(tk.text, {"for", "while", "do", "switch"})) continue;
      size_t body = index_after(t_, k);
      if (tk.text != "do") {
        if (body >= end || t_[body].text != "(") return true;
        body = index_after(t_, closing(t_, body));
      }
      if (body >= end) return true;
      const size_t body_end =
          t_[body].text == "{" ? closing(t_, body) + 1 : simple_statement_end(body, end);
      if (body_end > end) return true;  // a statement the scan does not follow: assume it may
      if (tk.text == "switch" && breaks_out(body, body_end, false)) return true;
      k = index_before(t_, body_end);
    }
    return false;
  }

  // The first token of the call named at |k|: its qualification (metal::simd_sum) included.
  size_t call_start(size_t k) const {
    for (size_t p = index_before(t_, k); p != t_.size() && t_[p].text == "::";
         p = index_before(t_, k)) {
      const size_t scope = index_before(t_, p);
      if (scope == t_.size() || t_[scope].kind != TokenKind::Identifier) return p;
      k = scope;
    }
    return k;
  }

  // Whether the statement's tokens [statement, call) let every lane that runs the statement
  // evaluate the call at |call| before anything else the statement does: the call is not an
  // operand of ?:, && or || (which may skip it), nor after a comma operator or another
  // declarator (whose value its operands could read), and, in an if, stands in the condition.
  // Calls of one statement come in order: the scan goes on from where the last one stopped.
  bool evaluated_first(size_t statement, size_t call, size_t k) {
    const Token& first = t_[statement];
    if (first.kind == TokenKind::Identifier && is_statement_keyword(first.text)) {
      if (first.text != "if") return false;
      const size_t open = index_after(t_, statement);
      if (open == t_.size() || t_[open].text != "(" || k > closing(t_, open)) return false;
    }
    if (scan_.statement != statement) scan_ = {statement, statement, {}, true};
    for (; scan_.ok && scan_.at < call; scan_.at = index_after(t_, scan_.at)) {
      const std::string_view text = t_[scan_.at].text;
      std::vector<bool>& parens = scan_.call_parens;
      if (is_one_of(text, {"?", "&&", "||", "and", "or"}) ||
          (text == "," && (parens.empty() || !parens.back()))) {
        scan_.ok = false;
      } else if (is_one_of(text, {"(", "[", "{"})) {
        const Token* before = prev_significant(t_, scan_.at);
        parens.push_back(
            text == "(" && before &&
            ((before->kind == TokenKind::Identifier && !is_statement_keyword(before->text)) ||
             is_one_of(before->text, {")", "]", ">"})));
      } else if (is_one_of(text, {")", "]", "}"}) && !parens.empty()) {
        parens.pop_back();
      }
    }
    return scan_.ok;
  }

  // The end of the statement that starts at |k| and holds no braces (a loop's body written
  // without them): the token after its ';', or npos when it is not such a statement (not
  // t_.size(): the statements of the body's top level end there).
  size_t simple_statement_end(size_t k, size_t end) const {
    int depth = 0;
    for (size_t j = k; j < end; j = index_after(t_, j)) {
      const std::string_view text = t_[j].text;
      if (text == "{" ||
          (j == k && t_[j].kind == TokenKind::Identifier && is_statement_keyword(t_[j].text))) {
        return std::string::npos;
      }
      if (is_one_of(text, {"(", "["})) ++depth;
      if (is_one_of(text, {")", "]"})) --depth;
      if (depth == 0 && text == ";") return j + 1;
    }
    return std::string::npos;
  }

  // Splits the statements [begin, end) of one level (the body, or a loop's body, |loops| deep,
  // |interchanged| inside a loop made the group's that does not wait) at its barriers and
  // SIMD-group or warp operations; false when a wait is not one that every thread (for an
  // operation, every lane of a simdgroup) meets there.
  bool split(size_t begin, size_t end, int loops, bool interchanged = false) {
    size_t region = begin;          // where the open region starts
    size_t statement = begin;       // where the statement holding the token starts
    size_t operations_end = begin;  // the end of the last operation's call
    bool next_starts = true;        // the next token starts a statement
    int depth = 0, braces = 0;
    for (size_t k = begin; k < end; ++k) {
      const Token& tk = t_[k];
      if (!is_significant(tk)) continue;
      if (next_starts && depth == 0) statement = k;
      next_starts = false;
      if (is_one_of(tk.text, {"(", "[", "{"})) ++depth;
      if (is_one_of(tk.text, {")", "]", "}"})) --depth;
      if (tk.text == "{") ++braces;
      if (tk.text == "}") --braces;
      if (depth == 0 && (tk.text == ";" || tk.text == "}")) next_starts = true;
      if (tk.kind != TokenKind::Identifier) continue;
      if (is_waiting_call(t_, k, dialect_, names_)) {
        const size_t open = index_after(t_, k);
        if (open >= end || t_[open].text != "(") {
          return refuse(tk.line, std::string("'").append(tk.text).append("' is not called"));
        }
        const size_t close = closing(t_, open);
        if (close >= end) return refuse(tk.line, "unbalanced brackets");
        if (is_lane_operation(t_, k, dialect_)) {
          const size_t call = call_start(k);
          if (k < operations_end) {
            return refuse(tk.line, "'" + std::string(tk.text) +
                                       "' is in another SIMD-group operation's operands");
          }
          if (braces != 0 || !evaluated_first(statement, call, k)) {
            return refuse(tk.line, "the lanes of a simdgroup may not all reach '" +
                                       std::string(tk.text) +
                                       "' together (it is in a branch, a block, or after ?:, "
                                       "&&, || or a comma)");
          }
          if (statement > region) add_region(region, statement, loops > 0);
          region = statement;
          plan_.pieces.push_back({RegionPlan::Piece::Kind::Operation, call, close + 1});
          in_loop_.push_back(loops > 0);
          operations_end = close + 1;
          continue;
        }
        if (!is_group_barrier(tk.text, dialect_)) {
          return refuse(tk.line, "region mode does not split at '" + std::string(tk.text) +
                                     "' (cooperative groups, barriers with a value, "
                                     "__match_all_sync)");
        }
        if (depth != 0 || !starts_statement(k, begin)) {
          return refuse(tk.line, "the threads of a group may not all reach '" +
                                     std::string(tk.text) + "' together");
        }
        const size_t semicolon = index_after(t_, close);
        if (semicolon >= end || t_[semicolon].text != ";") {
          return refuse(tk.line, "a barrier's value is used");
        }
        add_region(region, k, loops > 0);
        plan_.barriers.push_back({plan_.pieces.size(), tk.line});
        region = semicolon + 1;
        k = semicolon;
        next_starts = true;
        continue;
      }
      if (depth != 0 || (tk.text != "for" && tk.text != "while")) continue;
      const size_t open = index_after(t_, k);
      if (open >= end || t_[open].text != "(") continue;
      const size_t close = closing(t_, open);
      const size_t body = index_after(t_, close);
      if (close >= end || body >= end) continue;
      // The loop's body, braced or a single statement.
      const bool braced = t_[body].text == "{";
      const size_t body_end = braced ? closing(t_, body) + 1 : simple_statement_end(body, end);
      if (body_end > end) {
        if (waits_within(body, end)) {
          return refuse(tk.line, "a loop with waits whose body the splitter does not follow");
        }
        continue;
      }
      const bool uniform = starts_statement(k, begin) && uniform_header(k, close, body, body_end);
      const bool waits = waits_within(body, body_end);
      if (waits) {
        // A loop with waits: all threads must run it alike, one loop for the group.
        if (!uniform) {
          return refuse(tk.line,
                        "a loop with waits whose header the threads of a group may evaluate "
                        "apart (it must name only uniform values and its own counter)");
        }
        if (breaks_out(body, body_end)) {
          return refuse(tk.line, "a loop with waits that 'break' or 'continue' may leave early");
        }
      } else if (!interchange_ || interchanged || !uniform || leaves_early(body, body_end) ||
                 !branches_within(body, body_end)) {
        continue;
      }
      // A loop that does not wait but that every thread runs alike, and whose body branches,
      // is one loop for the group too, with the loop over the threads inside: their iterations
      // run side by side, so that a branch becomes a select the compiler vectorises across
      // the threads (threads that do not wait for each other may run in any interleaving; each
      // thread's own iterations keep their order). A body that does not branch runs faster as
      // each thread's own loop, its values in registers, not in slots each time round.
      add_region(region, k, loops > 0);
      plan_.pieces.push_back({RegionPlan::Piece::Kind::LoopBegin, k, braced ? body : close + 1});
      in_loop_.push_back(loops > 0);
      // Loops inside one that does not wait stay the threads' own: the compiler unrolls the
      // short ones, and the loop over the threads around them still vectorises.
      if (!split(braced ? body + 1 : body, braced ? body_end - 1 : body_end, loops + 1,
                 interchanged || !waits)) {
        return false;
      }
      plan_.pieces.push_back({RegionPlan::Piece::Kind::LoopEnd, body_end - 1, body_end});
      in_loop_.push_back(loops > 0);
      region = body_end;
      k = body_end - 1;
      next_starts = true;
    }
    add_region(region, end, loops > 0);
    return depth == 0 || refuse(0, "unbalanced brackets");
  }

  // The declaration starting at token |k| of a region, if the statement is one.
  std::optional<Declaration> declaration_at(size_t k, size_t end) const {
    size_t j = k, last = t_.size();
    int identifiers = 0;
    bool reference = false, plain = true;
    for (; j < end; j = index_after(t_, j)) {
      const Token& tk = t_[j];
      if (tk.kind == TokenKind::Identifier) {
        if (j == k && is_statement_keyword(tk.text)) return std::nullopt;
        if (is_one_of(tk.text, {"auto", "static", "extern", "thread_local", "decltype"})) {
          plain = false;
        }
        ++identifiers;
        last = j;
      } else if (tk.text == "&" || tk.text == "&&") {
        reference = true;
      } else if (tk.text != "::" && tk.text != "*") {
        break;
      }
    }
    if (j >= end || identifiers < 2 || last != index_before(t_, j)) return std::nullopt;
    if (!is_one_of(t_[j].text, {"=", ";", "[", ",", "(", "{"})) return std::nullopt;
    Declaration d{{{t_[last].text, last}}, k, plain && !reference};
    // The other declarators: ", name [= initialiser]" at the statement's own depth.
    int depth = 0;
    bool after_comma = false;
    for (size_t m = j; m < end; m = index_after(t_, m)) {
      const Token& tk = t_[m];
      if (depth == 0 && tk.text == ";") break;
      if (after_comma) {
        after_comma = false;
        const size_t next = index_after(t_, m);
        if (tk.kind != TokenKind::Identifier || next >= end ||
            !is_one_of(t_[next].text, {"=", ",", ";"})) {
          d.simple = false;
        } else {
          d.names.emplace_back(tk.text, m);
        }
        continue;
      }
      if (depth == 0 && (tk.text == "[" || tk.text == "(" || tk.text == "{") && m == j) {
        d.simple = false;  // an array, or an initialiser the type's constructor takes
      }
      if (is_one_of(tk.text, {"(", "[", "{"})) ++depth;
      if (is_one_of(tk.text, {")", "]", "}"})) --depth;
      if (depth == 0 && tk.text == ",") after_comma = true;
    }
    return d;
  }

  // The piece (but a loop's end) that token |k| belongs to, or npos: an operation's call first,
  // which lies in the region after it, then the pieces that follow each other in the text.
  size_t piece_of(size_t k) const {
    const auto& pieces = plan_.pieces;
    auto last_starting_by = [&](const std::vector<size_t>& order) {
      const auto after = std::upper_bound(
          order.begin(), order.end(), k, [&](size_t at, size_t p) { return at < pieces[p].begin; });
      return after == order.begin() || k >= pieces[*(after - 1)].end ? std::string::npos
                                                                     : *(after - 1);
    };
    const size_t operation = last_starting_by(operations_);
    return operation != std::string::npos ? operation : last_starting_by(text_order_);
  }

  // Whether |name| appears in a piece other than |piece| (members of other objects aside).
  bool used_elsewhere(std::string_view name, size_t piece) {
    // The pieces it appears in, found once per name: the first one, and whether there are more.
    auto [known, fresh] = pieces_using_.try_emplace(name, std::string::npos, false);
    auto& [first, several] = known->second;
    if (fresh) {
      for (size_t k : occurrences(name)) {
        const size_t p = piece_of(k);
        if (p == std::string::npos || is_member_access(prev_significant(t_, k))) continue;
        if (first == std::string::npos) first = p;
        several = several || p != first;
      }
    }
    return several || (first != std::string::npos && first != piece);
  }

  // Whether |name| is declared anywhere in the body but at |at| (declares_name). Renamed to a
  // per-thread slot, such a declaration would either not compile or, without an initialiser,
  // declare an array sized by the thread's index.
  bool declared_elsewhere(std::string_view name, size_t at) const {
    for (size_t k : occurrences(name)) {
      if (k != at && declares_name(t_, k)) {
        return true;
      }
    }
    return false;
  }

  // Group memory moves to the group's scope; variables that regions share become per-thread
  // slots, those of the body's top level only.
  bool find_declarations() {
    bool holds_address = false;  // some carried variable may (may_hold_an_address)
    for (size_t p = 0; p < plan_.pieces.size(); ++p) {
      const RegionPlan::Piece piece = plan_.pieces[p];
      if (piece.kind != RegionPlan::Piece::Kind::Region) continue;
      int depth = 0;
      for (size_t k = piece.begin; k < piece.end; ++k) {
        const Token& tk = t_[k];
        if (!is_significant(tk)) continue;
        const bool top = depth == 0 && starts_statement(k, piece.begin);
        if (is_one_of(tk.text, {"(", "[", "{"})) ++depth;
        if (is_one_of(tk.text, {")", "]", "}"})) --depth;
        if (!top) continue;
        if (declares_group_memory(t_, k, piece.end, dialect_)) {
          if (in_loop_[p]) return refuse(tk.line, "group memory declared in a loop with waits");
          size_t end = k;
          while (t_[end].text != ";") ++end;
          plan_.group_memory.emplace_back(k, end + 1);
          k = end;
          continue;
        }
        // A statement that starts like a templated type ("vec<float, 4> v") is not followed.
        const size_t after = index_after(t_, k);
        if (tk.kind == TokenKind::Identifier && after < piece.end && t_[after].text == "<" &&
            !is_statement_keyword(tk.text)) {
          return refuse(tk.line, "a statement that starts like a templated type");
        }
        // A variable another region uses becomes one slot per thread, named after it.
        std::optional<Declaration> d = declaration_at(k, piece.end);
        if (!d) continue;
        bool shared = false;
        for (const auto& [name, at] : d->names) shared = shared || used_elsewhere(name, p);
        if (!shared) continue;
        if (!d->simple) {
          return refuse(tk.line,
                        "a variable used across a wait is declared with auto, a reference, an "
                        "array or a constructor call");
        }
        for (const auto& [name, at] : d->names) {
          if (declared_elsewhere(name, at)) {
            // (append: GCC 12 warns of "'" + string, wrongly: its bug 105329)
            return refuse(tk.line, std::string("'").append(name).append(
                                       "', used across a wait, is declared more than once"));
          }
        }
        size_t semicolon = k;
        while (t_[semicolon].text != ";") semicolon = index_after(t_, semicolon);
        if (std::vector<size_t> uses; recomputable(*d, semicolon, uses)) {
          add_recomputed(*d, semicolon + 1, p, uses);
          k = semicolon;
          continue;
        }
        holds_address = holds_address || may_hold_an_address(*d);
        for (const auto& [name, at] : d->names) {
          plan_.carried.push_back({std::string(name), d->type_begin, d->names.front().second});
        }
      }
    }
    // A pointer that outlives a region may point at any variable a region copies (taken with
    // '&', bound to a reference, returned by a function or lambda given it by reference): then
    // every region works on the slots themselves. So may a pointer kept in group memory.
    for (const auto& [begin, end] : plan_.group_memory) {
      for (size_t k = begin; k < end; ++k) {
        if (t_[k].text == "*") holds_address = true;
      }
    }
    plan_.copies_slots = !holds_address;
    return true;
  }

  // Whether a variable |d| declares may hold an address: a pointer, or a type of the body's
  // own (a struct may have a pointer member). Only such a variable can carry the address of
  // another across a wait: of a region's copy, which is gone by then.
  bool may_hold_an_address(const Declaration& d) const {
    for (size_t k = d.type_begin; k < d.names.front().second; k = index_after(t_, k)) {
      const std::string_view text = t_[k].text;
      if (text == "*") return true;
      if (t_[k].kind == TokenKind::Identifier && !names_builtin_type(text) &&
          !is_one_of(text, {"thread", "device", "constant", "threadgroup", "metal", "__half",
                            "__half2", "__nv_bfloat16", "__nv_bfloat162"})) {
        return true;
      }
    }
    return false;
  }

  // Whether the const declaration |d|, up to its ';' at |semicolon|, computes its values from
  // what every piece computes again for its thread: uniform names, the index variables, earlier
  // such variables, literals and arithmetic (no memory, no calls but casts to a type word).
  bool recomputable(const Declaration& d, size_t semicolon, std::vector<size_t>& uses) const {
    bool constant = false;
    for (size_t k = d.type_begin; k < d.names.front().second; ++k) {
      constant = constant || is_one_of(t_[k].text, {"const", "constexpr"});
    }
    if (!constant) return false;
    for (size_t k = d.names.front().second; k < semicolon; k = index_after(t_, k)) {
      const Token& tk = t_[k];
      if (tk.kind == TokenKind::Number) continue;
      if (tk.kind == TokenKind::Identifier) {
        const size_t next = index_after(t_, k);
        const bool called = next < semicolon && t_[next].text == "(";
        if (is_type_word(tk.text) || is_one_of(tk.text, {"true", "false"})) continue;
        if (called) return false;
        const Token* before = prev_significant(t_, k);
        if (const auto found = recomputed_names_.find(tk.text); found != recomputed_names_.end()) {
          uses.push_back(found->second);
          continue;
        }
        if (is_member_access(before) || uniform_.count(tk.text) || thread_names_.count(tk.text)) {
          continue;
        }
        bool own = false;
        for (const auto& [name, at] : d.names) own = own || (name == tk.text && at <= k);
        if (own) continue;
        return false;
      }
      if (tk.kind != TokenKind::Punct ||
          is_one_of(tk.text, {"[", "]", "->", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=",
                              "^=", "<<=", ">>=", "{", "}"})) {
        return false;
      }
    }
    return true;
  }

  // A recomputed declaration [d.type_begin, end) of piece |declared_in|, which reads the
  // recomputed declarations |uses|: every later piece that names one of its variables declares
  // it again, and those it reads.
  void add_recomputed(const Declaration& d, size_t end, size_t declared_in,
                      const std::vector<size_t>& uses) {
    const size_t index = plan_.recomputed.size();
    plan_.recomputed.push_back({d.type_begin, end, {}});
    recomputed_uses_.push_back(uses);
    for (const auto& [name, at] : d.names) {
      recomputed_names_.emplace(name, index);
      for (size_t k : occurrences(name)) {
        const size_t p = piece_of(k);
        if (p != std::string::npos && p != declared_in && k >= end &&
            !is_member_access(prev_significant(t_, k))) {
          declare_again(index, p);
        }
      }
    }
  }

  // Piece |p| declares recomputed declaration |index| again, and those it reads.
  void declare_again(size_t index, size_t p) {
    std::vector<size_t>& pieces = plan_.recomputed[index].pieces;
    if (std::find(pieces.begin(), pieces.end(), p) != pieces.end()) return;
    pieces.insert(std::upper_bound(pieces.begin(), pieces.end(), p), p);
    for (size_t used : recomputed_uses_[index]) declare_again(used, p);
  }

  // A return leaves one thread: later regions skip it. Only a plain "return;" can occur in a
  // kernel body.
  bool find_returns() {
    for (const RegionPlan::Piece& piece : plan_.pieces) {
      if (piece.kind != RegionPlan::Piece::Kind::Region) continue;
      FunctionsWithin functions;
      for (size_t k = piece.begin; k < piece.end; ++k) {
        functions.step(t_, k);
        if (t_[k].kind != TokenKind::Identifier || t_[k].text != "return" || functions.inside()) {
          continue;
        }
        const size_t next = index_after(t_, k);
        if (next >= piece.end || t_[next].text != ";") {
          return refuse(t_[k].line, "a return with a value");
        }
        plan_.returns = true;
      }
    }
    return true;
  }

  // Whether loops that do not wait but that every thread runs alike become loops of the group.
  const bool interchange_;
  const Tokens& t_;
  Dialect dialect_;
  const std::unordered_set<std::string_view> uniform_;
  const WaitingHelpers& names_;  // how the body names cooperative groups, for its waiting calls
  RegionPlan plan_;
  std::string refusal_;             // why the body cannot be split, when it cannot
  std::vector<size_t> operations_;  // the operation pieces, in order
  std::vector<size_t> text_order_;  // the regions and loop headers, in order
  std::vector<bool> in_loop_;       // per piece: a region inside a loop
  std::unordered_set<std::string_view> thread_names_;  // the index variables a body reads
  // The variables of plan_.recomputed, with their declaration's index, and what each reads.
  std::unordered_map<std::string_view, size_t> recomputed_names_;
  std::vector<std::vector<size_t>> recomputed_uses_;
  // How far evaluated_first has read the statement of the last operation.
  struct StatementScan {
    size_t statement = std::string::npos, at = 0;
    std::vector<bool> call_parens;  // per open bracket: the parentheses of a call
    bool ok = true;
  } scan_;
  std::unordered_map<std::string_view, std::vector<size_t>> occurrences_;  // of each identifier
  std::unordered_map<std::string_view, std::pair<size_t, bool>> pieces_using_;  // used_elsewhere
};

}  // namespace

RegionPlanning plan_regions(const KernelSpec& spec, const std::vector<std::string>& uniform,
                            const WaitingHelpers& names) {
  // Loops of the group over loops of the threads need more of the body's variables in slots;
  // a body whose variables cannot all be slots splits at its waits alone.
  RegionPlanning planning = Splitter(spec, uniform, names, true).plan();
  return planning.plan ? std::move(planning) : Splitter(spec, uniform, names, false).plan();
}

std::vector<Token> region_tokens(const KernelSpec& spec, const RegionPlan& plan,
                                 std::deque<std::string>& texts) {
  std::vector<Token> t = spec.source_tokens;
  auto blank = [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      if (is_significant(t[k])) {
        t[k].kind = TokenKind::Space;
        t[k].text = {};
      }
    }
  };
  for (const auto& [begin, end] : plan.group_memory) blank(begin, end);
  // Each carried variable is renamed to what the pieces declare from its slot: one pass for all.
  std::unordered_map<std::string_view, std::string_view> slots;
  for (const RegionPlan::Carried& c : plan.carried) {
    blank(c.type_begin, c.type_end);
    slots.emplace(c.name, texts.emplace_back("kjit_carried_" + c.name));
  }
  for (size_t k = 0; k < t.size() && !slots.empty(); ++k) {
    if (t[k].kind != TokenKind::Identifier) continue;
    const auto slot = slots.find(t[k].text);
    if (slot != slots.end() && !is_member_access(prev_significant(spec.source_tokens, k))) {
      t[k].text = slot->second;
    }
  }
  if (plan.returns) {
    const std::string_view leave = texts.emplace_back("return (void)(kjit_exited[kjit_wi] = true)");
    FunctionsWithin functions;
    for (size_t k = 0; k < t.size(); ++k) {
      functions.step(spec.source_tokens, k);
      if (t[k].kind == TokenKind::Identifier && t[k].text == "return" && !functions.inside()) {
        t[k].text = leave;
      }
    }
  }
  return t;
}

std::vector<Token> with_operation_results(std::vector<Token> tokens, const RegionPlan& plan,
                                          std::deque<std::string>& texts) {
  size_t n = 0;
  for (const RegionPlan::Piece& piece : plan.pieces) {
    if (piece.kind != RegionPlan::Piece::Kind::Operation) continue;
    tokens[piece.begin].text =
        texts.emplace_back("kjit_op" + std::to_string(n++) + "_out[kjit_wi]");
    for (size_t k = piece.begin + 1; k < piece.end; ++k) {
      if (is_significant(tokens[k])) {
        tokens[k].kind = TokenKind::Space;
        tokens[k].text = {};
      }
    }
  }
  return tokens;
}

}  // namespace kjit::codegen
