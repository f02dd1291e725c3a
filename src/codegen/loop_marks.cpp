#include "codegen/loop_marks.h"

#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// The last token of the statement that starts at significant token |k|, or t.size() when the
// text ends first.
size_t statement_end(const std::vector<Token>& t, size_t k) {
  const size_t n = t.size();
  if (k >= n) return n;
  const std::string_view word = t[k].text;
  if (t[k].kind == TokenKind::Identifier) {
    // A labelled statement: "name: statement".
    const size_t colon = index_after(t, k);
    if (colon < n && t[colon].text == ":") return statement_end(t, index_after(t, colon));
  }
  // The parenthesised header after |at|, and the statement after it.
  auto after_header = [&](size_t at) {
    if (at < n && t[at].text == "constexpr") at = index_after(t, at);  // if constexpr
    if (at >= n || t[at].text != "(") return n;
    const size_t close = closing(t, at);
    return close >= n ? n : statement_end(t, index_after(t, close));
  };
  if (word == "{") return closing(t, k);
  if (word == "for" || word == "while" || word == "switch") return after_header(index_after(t, k));
  if (word == "if") {
    const size_t then_end = after_header(index_after(t, k));
    const size_t next = then_end >= n ? n : index_after(t, then_end);
    if (next < n && t[next].text == "else") return statement_end(t, index_after(t, next));
    return then_end;
  }
  if (word == "do") {
    const size_t body_end = statement_end(t, index_after(t, k));
    const size_t w = body_end >= n ? n : index_after(t, body_end);
    if (w >= n || t[w].text != "while") return n;
    const size_t open = index_after(t, w);
    if (open >= n || t[open].text != "(") return n;
    const size_t close = closing(t, open);
    return close >= n ? n : index_after(t, close);  // the ';'
  }
  for (size_t j = k; j < n; j = index_after(t, j)) {
    const std::string_view text = t[j].text;
    if (text == "(" || text == "[" || text == "{") {
      j = closing(t, j);
      if (j >= n) return n;
    } else if (text == ";") {
      return j;
    }
  }
  return n;
}

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
  std::vector<bool> ends_do(n);  // the while of a do-while
  FunctionsWithin functions;
  for (size_t i = 0; i < n; ++i) {
    functions.step(t, i);
    const std::string_view word = t[i].text;
    if (t[i].kind != TokenKind::Identifier || functions.inside() || ends_do[i] ||
        (word != "for" && word != "while" && word != "do")) {
      continue;
    }
    const size_t end = statement_end(t, i);
    if (end >= n) continue;  // unfinished: the compiler will say so
    bool waiting = false;
    for (size_t k = i; k <= end && !waiting; ++k) waiting = waits[k];
    size_t body = 0, open = 0, close = 0;
    if (word == "do") {
      body = index_after(t, i);
      const size_t w = index_after(t, statement_end(t, body));
      ends_do[w] = true;
    } else {
      open = index_after(t, i);
      close = closing(t, open);
      body = index_after(t, close);
    }
    if (!waiting) continue;
    const std::string mark = "kjit_loop_" + std::to_string(i);
    marks.before[i] += "{::kjit::coop::loop_mark " + mark +
                       "(co_await ::kjit::coop::this_lane{}, " + std::to_string(t[i].line) + ");";
    blank_pragmas_before(t, i, marks);
    marks.before[end + 1] = "}" + marks.before[end + 1];
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
      std::string& after_body = marks.before[statement_end(t, body) + 1];
      after_body = "}" + after_body;
    }
  }
  return marks;
}

}  // namespace kjit::codegen
