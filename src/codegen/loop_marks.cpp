#include "codegen/loop_marks.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// The last token of the statement that starts at a significant token, or t.size() when the text
// ends first. Statements nest (a loop's body, an if's branches), so each end is found without
// recursion, and remembered: nested loops ask for the same ends again.
class StatementEnds {
 public:
  explicit StatementEnds(const std::vector<Token>& t)
      : t_(t), ends_(t.size(), kUnknown), simple_ends_(t.size(), kUnknown) {}

  size_t operator()(size_t k) {
    const size_t n = t_.size();
    // What is left of a statement around the one being found: an if's else, a do's while.
    struct Around {
      bool is_do;
      std::vector<size_t> starts;  // statements that end where it ends
    };
    std::vector<Around> around;
    std::vector<size_t> starts;  // statements that end where the one being found ends
    for (;;) {
      size_t end = kUnknown;
      while (end == kUnknown) {
        if (k >= n) {
          end = n;
        } else if (ends_[k] != kUnknown) {
          end = ends_[k];
        } else {
          starts.push_back(k);
          const std::string_view word = t_[k].text;
          const size_t colon = t_[k].kind == TokenKind::Identifier ? index_after(t_, k) : n;
          if (colon < n && t_[colon].text == ":") {
            k = index_after(t_, colon);  // a labelled statement: "name: statement"
          } else if (word == "{") {
            end = closing(t_, k);
          } else if (word == "for" || word == "while" || word == "switch") {
            k = after_header(index_after(t_, k));
          } else if (word == "if") {
            k = after_header(index_after(t_, k));
            around.push_back({false, std::move(starts)});
            starts.clear();
          } else if (word == "do") {
            k = index_after(t_, k);
            around.push_back({true, std::move(starts)});
            starts.clear();
          } else {
            end = simple_end(k);
          }
        }
      }
      for (;;) {
        for (size_t s : starts) ends_[s] = end;
        if (around.empty()) return end;
        Around outer = std::move(around.back());
        around.pop_back();
        starts = std::move(outer.starts);
        const size_t next = end >= n ? n : index_after(t_, end);
        if (outer.is_do) {
          end = do_end(next);
          continue;
        }
        if (next < n && t_[next].text == "else") {
          k = index_after(t_, next);  // the if ends where its else branch does
          break;
        }
      }
    }
  }

 private:
  static constexpr size_t kUnknown = ~size_t(0);

  // The statement after the parenthesised header at |at|, or t.size() when there is none.
  size_t after_header(size_t at) const {
    const size_t n = t_.size();
    if (at < n && t_[at].text == "constexpr") at = index_after(t_, at);  // if constexpr
    if (at >= n || t_[at].text != "(") return n;
    const size_t close = closing(t_, at);
    return close >= n ? n : index_after(t_, close);
  }

  // The ';' of a do-while whose "while" is at |w|.
  size_t do_end(size_t w) const {
    const size_t n = t_.size();
    if (w >= n || t_[w].text != "while") return n;
    const size_t open = index_after(t_, w);
    if (open >= n || t_[open].text != "(") return n;
    const size_t close = closing(t_, open);
    return close >= n ? n : index_after(t_, close);
  }

  // The ';' that ends an expression or declaration from |k|, stepping over brackets. Walks
  // from different tokens meet on the way: each token's answer is kept.
  size_t simple_end(size_t k) {
    const size_t n = t_.size();
    std::vector<size_t> walked;
    size_t end = n;
    for (size_t j = k; j < n; j = index_after(t_, j)) {
      if (simple_ends_[j] != kUnknown) {
        end = simple_ends_[j];
        break;
      }
      walked.push_back(j);
      const std::string_view text = t_[j].text;
      if (text == "(" || text == "[" || text == "{") {
        j = closing(t_, j);
        if (j >= n) break;
      } else if (text == ";") {
        end = j;
        break;
      }
    }
    for (size_t j : walked) simple_ends_[j] = end;
    return end;
  }

  const std::vector<Token>& t_;
  std::vector<size_t> ends_, simple_ends_;
};

// Blanks the unroll hints right before token |i| (keeping their line breaks): #pragma lines,
// also among other directives (#if ... #endif), and _Pragma("...") operators.
void blank_pragmas_before(const std::vector<Token>& t, size_t i, LoopMarks& marks) {
  auto blank = [&](size_t from, size_t to) {
    for (size_t j = from; j < to; ++j) marks.instead[j] = blank_keeping_lines(t[j].text);
  };
  for (size_t k = i; k > 0;) {
    const Token& p = t[k - 1];
    if (p.in_directive) {
      size_t hash = k - 1;
      while (hash > 0 && t[hash].kind != TokenKind::Directive) --hash;
      if (t[hash].kind != TokenKind::Directive) return;
      const size_t word = index_after(t, hash);
      if (word < k && t[word].text == "pragma") blank(hash, k);
      k = hash;
    } else if (p.kind == TokenKind::Space || p.kind == TokenKind::Comment) {
      --k;
    } else if (p.text == ")") {
      const size_t open = opening(t, k - 1);
      const size_t name = open < t.size() ? index_before(t, open) : t.size();
      if (name >= t.size() || t[name].text != "_Pragma") return;
      blank(name, k);
      k = name;
    } else {
      return;
    }
  }
}

}  // namespace

LoopMarks mark_waiting_loops(const std::vector<Token>& t, const std::vector<bool>& waits) {
  const size_t n = t.size();
  LoopMarks marks{std::vector<std::string>(n + 1), std::vector<std::optional<std::string>>(n)};
  // Loops close where their statement ends, inner ones first: how many braces go there, in
  // front of anything else marked there.
  std::vector<size_t> closes(n + 1);
  std::vector<size_t> waits_before(n + 1);  // calls that wait among the first k tokens
  for (size_t k = 0; k < n; ++k) waits_before[k + 1] = waits_before[k] + waits[k];
  std::vector<bool> ends_do(n);  // the while of a do-while
  StatementEnds statement_end(t);
  FunctionsWithin functions;
  for (size_t i = 0; i < n; ++i) {
    functions.step(t, i);
    const std::string_view word = t[i].text;
    if (t[i].kind != TokenKind::Identifier || functions.inside() || ends_do[i] ||
        (word != "for" && word != "while" && word != "do")) {
      continue;
    }
    const size_t end = statement_end(i);
    if (end >= n) continue;  // unfinished: the compiler will say so
    const bool waiting = waits_before[end + 1] > waits_before[i];
    size_t body = 0, open = 0, close = 0;
    if (word == "do") {
      body = index_after(t, i);
      const size_t w = index_after(t, statement_end(body));
      ends_do[w] = true;
    } else {
      open = index_after(t, i);
      close = closing(t, open);
      body = index_after(t, close);
    }
    if (!waiting) continue;
    const std::string mark = "kjit_loop_" + std::to_string(i);
    marks.before[i] += "{::kjit::coop::loop_mark " + mark +
                       "(co_await ::kjit::coop::this_lane{}, KJIT_CALL_SITE);";
    blank_pragmas_before(t, i, marks);
    ++closes[end + 1];
    const std::string next = "(void)" + mark + ".next()";
    const std::vector<size_t> semicolons =
        word == "for" ? top_level(t, open, close, ";") : std::vector<size_t>();
    if (word == "while") {
      // for (; condition; next): a declaration in the condition stays one.
      marks.instead[i] = "for";
      marks.before[open + 1] += ";";
      marks.before[close] += ";" + next;
    } else if (semicolons.size() == 2) {
      const size_t step = index_after(t, semicolons[1]);
      marks.before[step] += step == close ? next : next + ", ";
    } else if (t[body].text == "{") {
      marks.before[body + 1] += next + ";";
    } else {
      marks.before[body] += "{" + next + ";";
      ++closes[statement_end(body) + 1];
    }
  }
  for (size_t k = 0; k <= n; ++k) {
    if (closes[k]) marks.before[k].insert(0, closes[k], '}');
  }
  return marks;
}

}  // namespace kjit::codegen
