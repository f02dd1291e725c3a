// The CPU's emitter: the body as a loop over a group's threads, as regions between barriers,
// or as coroutines (codegen/cpu_mode.h), and the entry point the CPU backend calls with a range
// of groups.
#include <algorithm>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "codegen/emit.h"
#include "codegen/regions.h"
#include "codegen/token_scan.h"

namespace kjit::codegen {
namespace {

// The header reads the running thread's index variables through its context.
std::string header_defines(const IndexVariables& vars) {
  std::string out;
  for (const CudaBuiltin* b : vars.header) {
    out +=
        "#define " + std::string(b->name) + " (" +
        cuda_typed(*b, Target::Cpu, std::string("::kjit::current_thread->") + b->attribute + "()") +
        ")\n";
  }
  return out;
}

// Sets the running thread for what reads it without arguments: the header's index variables,
// this_grid() and this_thread_block(). Cooperative mode sets it for each thread it resumes.
std::string current_thread_local(const KernelSpec& spec, const IndexVariables& vars,
                                 const std::string& ctx) {
  if (!vars.header.empty() || has_identifier(spec.source_tokens, "this_grid") ||
      has_identifier(spec.source_tokens, "this_thread_block") ||
      has_identifier(spec.header_tokens, "this_grid") ||
      has_identifier(spec.header_tokens, "this_thread_block")) {
    return "  ::kjit::current_thread = &" + ctx + ";\n";
  }
  return "";
}

// A body in region mode: a function that runs one whole group, each region a loop over the
// group's threads (codegen/regions.h).
void write_regions(Writer& w, const KernelSpec& spec, const CallSignature& call,
                   const RegionPlan& plan, const IndexVariables& vars, const std::string& name,
                   const std::string& params) {
  std::deque<std::string> texts;
  const bool debug = spec.compile_options.debug;
  // Loop headers and operations' calls read the body as regions see it; regions read each
  // operation's result in place of its call.
  const std::vector<Token> edited =
      debug ? debug_view_tokens(spec, call, region_tokens(spec, plan, texts), texts)
            : region_tokens(spec, plan, texts);
  const std::vector<Token> in_regions =
      plan.operations ? with_operation_results(edited, plan, texts) : std::vector<Token>();
  const std::vector<Token>& region_text = plan.operations ? in_regions : edited;
  // Group memory is declared from the body's own tokens, as locals of the function that runs a
  // whole group (a worker's thread_local in the other modes): no pointer the compiler cannot
  // see through reaches them, and their loops vectorise. Dynamic group memory stays the launch's.
  std::vector<Token> own = plan.group_memory.empty() ? std::vector<Token>()
                           : debug ? debug_view_tokens(spec, call, spec.source_tokens, texts)
                                   : spec.source_tokens;
  for (const auto& [begin, end] : plan.group_memory) {
    if (is_one_of(own[begin].text, {"threadgroup", "__shared__"})) {
      own[begin].kind = TokenKind::Space;
      own[begin].text = {};
    }
  }
  // Tokens [begin, end) of |tokens|, the body's own or as regions see them.
  auto user_text = [&](const std::vector<Token>& tokens, size_t begin, size_t end) {
    w << "#line " << std::to_string(tokens[begin].line) << " \"" << kSourceFile << "\"\n";
    w << rewrite(std::vector<Token>(tokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                    tokens.begin() + static_cast<std::ptrdiff_t>(end)),
                 spec.dialect, Target::Cpu, false, spec.shared_memory);
    w.resume_generated();
  };
  // The group is a thread_ctx or, from the small-grid entry point, a small_grid_group, whose
  // loops over threads tell the compiler the grid's bound (target/cpu/thread.h).
  w << "template <class kjit_group_t>\nstatic KJIT_INLINE void " << name << "(\n"
    << params << (params.empty() ? "    " : ",\n    ") << "const kjit_group_t& kjit_group) {\n";
  w << template_declarations(spec, call.template_args);
  // Loop headers read the uniform ones.
  w << thread_locals(spec, Target::Cpu, vars, "kjit_group", "");
  // Text outside the regions that indexes an array reports the group's first thread.
  if (debug) w << "  const ::kjit::thread_ctx& kjit_thread = kjit_group;\n";
  warn_of_unchecked_arrays(spec);
  for (const auto& [begin, end] : plan.group_memory) user_text(own, begin, end);
  // Each carried variable's slots, and its type for the pieces' copies of them.
  std::vector<std::string> carried_types;
  for (const RegionPlan::Carried& c : plan.carried) {
    std::string type;
    for (size_t k = c.type_begin; k < c.type_end; ++k) {
      const Token& t = spec.source_tokens[k];
      if (t.kind == TokenKind::Space || t.kind == TokenKind::Comment || t.text == "const" ||
          t.text == "constexpr" || (spec.dialect == Dialect::Metal && t.text == "thread")) {
        continue;
      }
      type += std::string(t.text) + " ";
    }
    if (spec.dialect == Dialect::Metal) type = rewrite(lex(type), spec.dialect, Target::Cpu);
    w << "  " << type << "kjit_slot_" << c.name << "[1024];\n";
    carried_types.push_back(std::move(type));
  }
  if (plan.returns) {
    w << "  bool kjit_exited[1024];\n"
         "  for (unsigned kjit_i = 0; kjit_i < kjit_group.group_threads(); ++kjit_i) "
         "kjit_exited[kjit_i] = false;\n";
  }
  // A loop over threads may give a type of its own for their context (the lane it counts,
  // target/cpu/thread.h), which the thread's locals read; the text reads it as a thread_ctx.
  const std::string region_locals =
      "  const ::kjit::thread_ctx& kjit_thread = kjit_thread_in_loop;\n" +
      thread_locals(spec, Target::Cpu, vars, "kjit_thread_in_loop",
                    current_thread_local(spec, vars, "kjit_thread"));
  // The loops of the regions are the barriers: a debug build starts a new stretch at each for
  // the race checks.
  size_t barrier = 0;
  auto barriers_before = [&](size_t p) {
    for (; barrier < plan.barriers.size() && plan.barriers[barrier].before == p; ++barrier) {
      if (debug) w << "  ::kjit::debug::races::next_stretch();\n";
    }
  };
  // The recomputed declarations piece |p| declares again, then its text.
  auto declare_again = [&](size_t p) {
    for (const RegionPlan::Recomputed& r : plan.recomputed) {
      if (std::binary_search(r.pieces.begin(), r.pieces.end(), p)) {
        user_text(edited, r.begin, r.end);
      }
    }
  };
  // The carried variables that tokens [begin, end) of |tokens| name, in one pass. A debug
  // build's rewrites may join a name to the text around it, so each token's text is searched.
  std::unordered_map<std::string_view, size_t> carried_names;
  for (size_t c = 0; c < plan.carried.size(); ++c) carried_names.emplace(plan.carried[c].name, c);
  std::vector<size_t> seen_in_scan(plan.carried.size(), 0);
  size_t scan = 0;
  auto carried_within = [&](const std::vector<Token>& tokens, size_t begin, size_t end) {
    static constexpr std::string_view prefix = "kjit_carried_";
    std::vector<size_t> used;
    ++scan;
    for (size_t k = begin; k < end && !carried_names.empty(); ++k) {
      const std::string_view text = tokens[k].text;
      for (size_t at = text.find(prefix); at != std::string_view::npos;
           at = text.find(prefix, at)) {
        at += prefix.size();
        const size_t stop = identifier_end(text, at);
        const auto found = carried_names.find(text.substr(at, stop - at));
        if (found == carried_names.end() || seen_in_scan[found->second] == scan) continue;
        seen_in_scan[found->second] = scan;
        used.push_back(found->second);
      }
    }
    return used;
  };
  // How a piece names the carried variables |used|: a reference to the thread's slot or, in a
  // region (|copies|), a copy of it (uninitialised where the region declares the variable),
  // stored back at the region's end by close_slots; always the slot where the plan copies no
  // slots (RegionPlan::copies_slots).
  auto open_slots = [&](const std::vector<size_t>& used, const RegionPlan::Piece& piece,
                        bool copies) {
    for (size_t c : used) {
      const RegionPlan::Carried& v = plan.carried[c];
      const bool copy = copies && plan.copies_slots;
      const bool declared_here = v.type_begin >= piece.begin && v.type_begin < piece.end;
      w << "  " << (copy ? carried_types[c] : std::string("auto& ")) << "kjit_carried_" << v.name;
      if (!copy || !declared_here) w << " = kjit_slot_" << v.name << "[kjit_wi]";
      w << ";\n";
    }
  };
  auto close_slots = [&](const std::vector<size_t>& used) {
    if (!plan.copies_slots) return;
    for (size_t c : used) {
      const RegionPlan::Carried& v = plan.carried[c];
      w << "  kjit_slot_" << v.name << "[kjit_wi] = kjit_carried_" << v.name << ";\n";
    }
  };
  // A loop over the group's threads that runs |text| for each thread still in the kernel.
  auto each_thread = [&](auto&& text) {
    w << "  ::kjit::for_each_thread(kjit_group, [&](const auto& kjit_thread_in_loop, "
         "unsigned long kjit_wi) __attribute__((always_inline)) {\n";
    if (plan.returns) w << "  if (kjit_exited[kjit_wi]) return;\n";
    text();
    w << "  });\n";
  };
  size_t operation = 0;
  for (size_t p = 0; p < plan.pieces.size(); ++p) {
    barriers_before(p);
    const RegionPlan::Piece& piece = plan.pieces[p];
    switch (piece.kind) {
      case RegionPlan::Piece::Kind::Region:
        each_thread([&] {
          w << region_locals << "  (void)kjit_wi;\n";
          const std::vector<size_t> used = carried_within(region_text, piece.begin, piece.end);
          open_slots(used, piece, true);
          declare_again(p);
          user_text(region_text, piece.begin, piece.end);
          close_slots(used);
        });
        break;
      case RegionPlan::Piece::Kind::Operation: {
        // The call, made in each lane, gives the lane's operand as the region prelude's
        // operation type (prelude/mode/regions/), whose combine fills the result slots.
        const std::string op = "kjit_op" + std::to_string(operation++);
        w << "  auto " << op
          << "_operand = [&](const auto& kjit_thread_in_loop, unsigned long kjit_wi) "
             "__attribute__((always_inline)) {\n"
          << region_locals << "  (void)kjit_wi;\n";
        open_slots(carried_within(edited, piece.begin, piece.end), piece, false);
        declare_again(p);
        w << "  return\n";
        user_text(edited, piece.begin, piece.end);
        w << "  ;\n  };\n"
          << "  using " << op << "_t = decltype(" << op << "_operand(kjit_group, 0u));\n"
          << "  " << op << "_t " << op << "_in[1024];\n"
          << "  typename " << op << "_t::result " << op << "_out[1024];\n";
        each_thread([&] {
          w << "  " << op << "_in[kjit_wi] = " << op << "_operand(kjit_thread_in_loop, kjit_wi);\n";
        });
        w << "  " << op << "_t::combine(" << op << "_in, " << op << "_out, "
          << (plan.returns ? "kjit_exited" : "nullptr") << ", kjit_group.group_threads());\n";
        break;
      }
      case RegionPlan::Piece::Kind::LoopBegin:
        user_text(edited, piece.begin, piece.end);
        w << "  {\n";
        break;
      case RegionPlan::Piece::Kind::LoopEnd:
        // The group's loop ends when every thread has left the kernel: a loop its threads
        // leave by returning may have no end of its own.
        if (plan.returns) {
          w << "  {\n    bool kjit_running = false;\n"
               "    for (unsigned kjit_i = 0; kjit_i < kjit_group.group_threads(); ++kjit_i) "
               "kjit_running = kjit_running || !kjit_exited[kjit_i];\n"
               "    if (!kjit_running) break;\n  }\n";
        }
        w << "  }\n";
        break;
    }
  }
  barriers_before(plan.pieces.size());
  w << "}\n\n";
}

// The entry point the library calls with a range of groups, running the kernel function
// |g|.kernel_name as |mode| says, and the end of namespace kjit_user.
void write_entry_point(Writer& w, const GeneratedSource& g, const KernelSpec& spec,
                       const CallSignature& call, CpuMode mode) {
  // Arguments are unpacked once, outside the thread loop, into locals the loop captures by value.
  const std::vector<Param>& layout = g.layout;
  const std::string args = arguments(layout);
  std::string unpacked;
  for (size_t k = 0; k < layout.size(); ++k) {
    const Param& p = layout[k];
    const std::string i = std::to_string(p.index);
    const std::string at = std::to_string(p.index * 10);
    std::string init;
    switch (p.kind) {
      case Param::Kind::Input:
        init = "static_cast<" + p.type + ">(kjit_launch->args[" + i + "])";
        break;
      case Param::Kind::Scalar:
        init = "{*static_cast<const " + std::string(type_name(spec, call.inputs[p.index].first)) +
               "*>(kjit_launch->args[" + i + "])}";
        break;
      case Param::Kind::Shape:
        init = p.type + "::of(kjit_launch->shapes + " + at + ")";
        break;
      case Param::Kind::Strides:
        init = p.type + "::of(kjit_launch->strides + " + at + ")";
        break;
      case Param::Kind::Ndim:
        init = "kjit_launch->ndims[" + i + "]";
        break;
      case Param::Kind::Output:
        init = "static_cast<" + p.type + ">(kjit_launch->args[" +
               std::to_string(spec.input_names.size() + p.index) + "])";
        break;
    }
    unpacked += "  " + p.type + " const kjit_arg" + std::to_string(k) + " = " + init + ";\n";
  }
  // A debug build marks each group's start and end and checks its barriers
  // (target/cpu/debug_races.h), reporting to the report, the last parameter.
  const std::string checks = spec.compile_options.debug
                                 ? ", ::kjit::debug::races::group_checks{kjit_arg" +
                                       std::to_string(layout.size() - 1) + "}"
                                 : "";
  // The function named |entry|, running the groups with |run|(kjit_launch, kjit_first,
  // kjit_end, |kernel|).
  auto write_entry = [&](const char* entry, const std::string& run, const std::string& kernel) {
    w << "extern \"C\" __attribute__((visibility(\"default\"))) void " << entry
      << "(\n"
         "    const kjit_cpu_launch* kjit_launch, unsigned long long kjit_first,\n"
         "    unsigned long long kjit_end) {\n"
      << unpacked << "  " << run << "(kjit_launch, kjit_first, kjit_end,\n      " << kernel
      << checks << ");\n}\n\n";
  };
  const std::string call_kernel = g.kernel_name + "(" + args;
  switch (mode) {
    case CpuMode::Coroutine:
      write_entry(
          kCpuEntry, "::kjit::coop::run_groups",
          "[=](const ::kjit::thread_ctx& t) {\n        return " + call_kernel + "t);\n      }");
      break;
    case CpuMode::Regions: {
      const std::string kernel =
          "[=](const auto& kjit_group) __attribute__((always_inline)) {\n        " + call_kernel +
          "kjit_group);\n      }";
      write_entry(kCpuEntry, "::kjit::run_whole_groups", kernel);
      write_entry(kCpuSmallGridEntry, "::kjit::run_whole_groups<::kjit::small_grid_group>", kernel);
      break;
    }
    case CpuMode::Loop:
      write_entry(kCpuEntry, "::kjit::run_groups_loop",
                  "[=](const ::kjit::thread_ctx& t) __attribute__((always_inline)) {\n        " +
                      call_kernel + "t);\n      }");
      break;
  }
  w << "}  // namespace kjit_user\n";
}

}  // namespace

GeneratedSource emit_cpu_source(const KernelSpec& spec, const CallSignature& call,
                                const CpuModeChoice& mode) {
  const WaitingHelpers& helpers = mode.helpers;
  check_waits_are_suspendable(spec.source_tokens, spec.dialect, TextOrigin::Source, helpers);
  check_waits_are_suspendable(spec.header_tokens, spec.dialect, TextOrigin::Header, helpers);
  check_header_macros_do_not_wait(spec.header_tokens, spec.source_tokens, spec.dialect, helpers);
  const bool coroutine = mode.mode == CpuMode::Coroutine;
  GeneratedSource g;
  g.cpu_mode = mode.mode;
  g.cpu_mode_reason = mode.reason;
  const IndexVariables vars = index_variables(spec, Target::Cpu);
  Writer w;
  write_common_part(w, g, spec, Target::Cpu, mode.mode, vars, header_defines(vars), helpers);
  const std::string params = kernel_parameters(spec, call, Target::Cpu);
  if (mode.mode == CpuMode::Regions) {
    write_regions(w, spec, call, *mode.regions, vars, g.kernel_name, params);
  } else {
    const std::string locals =
        thread_locals(spec, Target::Cpu, vars, "kjit_thread",
                      coroutine ? std::string() : current_thread_local(spec, vars, "kjit_thread"));
    write_kernel_function(w, g, spec, call, Target::Cpu, params, locals, coroutine, helpers);
  }
  g.layout = parameter_layout(spec, call);
  write_entry_point(w, g, spec, call, mode.mode);
  g.text = std::move(w.str());
  return g;
}

}  // namespace kjit::codegen
