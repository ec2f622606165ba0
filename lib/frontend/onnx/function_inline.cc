// Inlines calls of model-local functions (ModelProto.functions) into the calling graph.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "onnx_import.h"

namespace kiln::onnx_import {
namespace {

using FunctionKey = std::pair<std::string, std::string>;

std::string functionName(const onnx::FunctionProto& f) {
  return printableName(f.domain().empty() ? f.name() : f.domain() + "." + f.name());
}

// Expands one top-level call, recursing into nested calls. The copies it makes live in
// `storage` (a deque: their addresses stay valid while the graph is built).
class FunctionInliner {
 public:
  FunctionInliner(ImportContext& ctx, const Graph& g, std::deque<onnx::NodeProto>& storage,
                  std::vector<InlinedNode>& out)
      : ctx_(ctx), g_(g), storage_(storage), out_(out) {}

  Status expand(const onnx::NodeProto& call, const SourceNodeRef& where) {
    const onnx::FunctionProto& f = *ctx_.functions.at({call.domain(), call.op_type()});
    for (const onnx::FunctionProto* open : stack_)
      if (open == &f) {
        std::string chain;
        for (const onnx::FunctionProto* s : stack_) chain += functionName(*s) + " -> ";
        return fail(where,
                    fmt::format("function '{}' is recursive ({}{})", functionName(f), chain,
                                functionName(f)),
                    "kiln cannot inline recursive functions; fix the model");
      }
    if (int(stack_.size()) >= ctx_.options.maxSubgraphDepth)
      return fail(
          where,
          fmt::format("function calls nest more than {} deep", ctx_.options.maxSubgraphDepth),
          "raise --max-nesting if the model is trusted (docs/limits.md)");
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size())
      return fail(
          where, fmt::format("passes {} inputs and {} outputs, but function '{}' declares {} "
                             "and {}",
                             call.input_size(), call.output_size(), functionName(f), f.input_size(),
                             f.output_size()));
    std::map<std::string, int64_t> opsets;
    for (const auto& o : f.opset_import()) {
      std::string domain = o.domain() == "ai.onnx" ? std::string() : o.domain();
      if (domain.empty() && (o.version() < kMinOpset || o.version() > kMaxOpset))
        return fail(where,
                    fmt::format("function '{}' imports ai.onnx opset {}; kiln supports {} to {}",
                                functionName(f), o.version(), kMinOpset, kMaxOpset),
                    "convert the model with onnx.version_converter");
      opsets[domain] = o.version();
    }
    KILN_ASSIGN_OR_RETURN(auto names, bindNames(call, f, where.node, where));
    stack_.push_back(&f);
    for (int j = 0; j < f.node_size(); ++j) {
      const onnx::NodeProto& inner = f.node(j);
      if (++ctx_.inlinedNodes > kMaxInlinedNodes)
        return fail(where,
                    fmt::format("inlining model-local functions makes more than {} nodes",
                                kMaxInlinedNodes),
                    "inline the model's functions (onnx.inliner) before compiling");
      onnx::NodeProto& copy = storage_.emplace_back();
      KILN_RETURN_IF_ERROR(instantiate(inner, j, call, f, names, where, copy));
      std::string domain = copy.domain() == "ai.onnx" ? std::string() : copy.domain();
      auto it = opsets.find(domain);
      SourceNodeRef innerWhere{ctx_.file, copy.name(), copy.op_type(), copy.domain(),
                               it != opsets.end() ? it->second : ctx_.opsetFor(domain)};
      if (ctx_.functions.count({copy.domain(), copy.op_type()}))
        KILN_RETURN_IF_ERROR(expand(copy, innerWhere));
      else
        out_.push_back({&copy, std::move(innerWhere)});
    }
    stack_.pop_back();
    return Status();
  }

 private:
  Error fail(const SourceNodeRef& where, std::string_view what,
             std::string_view todo = "fix the model") const {
    return Error(formatNodeMessage(where, what, todo));
  }

  // Formal inputs map to the call's actual inputs ("" where omitted), formal outputs to its
  // outputs (a fresh name where the call leaves one out), and every other value a body node
  // produces to a fresh name derived from "<call>/<name>".
  Expected<std::unordered_map<std::string, std::string>> bindNames(const onnx::NodeProto& call,
                                                                   const onnx::FunctionProto& f,
                                                                   const std::string& prefix,
                                                                   const SourceNodeRef& where) {
    std::unordered_map<std::string, std::string> names;
    for (int i = 0; i < f.input_size(); ++i)
      names[f.input(i)] = i < call.input_size() ? call.input(i) : std::string();
    for (int i = 0; i < f.output_size(); ++i) {
      if (names.count(f.output(i)))
        return fail(where, fmt::format("function '{}' lists '{}' as both an input and an output",
                                       functionName(f), printableName(f.output(i))));
      names[f.output(i)] = i < call.output_size() && !call.output(i).empty()
                               ? call.output(i)
                               : ctx_.freshName(g_, prefix + "/" + f.output(i));
    }
    for (const auto& n : f.node())
      for (const auto& o : n.output())
        if (!o.empty() && !names.count(o)) names[o] = ctx_.freshName(g_, prefix + "/" + o);
    return names;
  }

  // The copy of body node j for this call: values renamed, a name under the call's, and
  // attributes that refer to the call's attributes (ref_attr_name) resolved; one the call
  // does not set is left out, so the op's default applies.
  Status instantiate(const onnx::NodeProto& inner, int j, const onnx::NodeProto& call,
                     const onnx::FunctionProto& f,
                     const std::unordered_map<std::string, std::string>& names,
                     const SourceNodeRef& where, onnx::NodeProto& copy) {
    copy.set_op_type(inner.op_type());
    copy.set_domain(inner.domain());
    copy.set_doc_string(inner.doc_string());
    std::string local =
        inner.name().empty() ? fmt::format("{}_{}", inner.op_type(), j) : inner.name();
    copy.set_name(where.node + "/" + local);
    for (const auto& in : inner.input()) {
      if (in.empty()) {
        copy.add_input();
        continue;
      }
      auto it = names.find(in);
      if (it == names.end())
        return fail(where,
                    fmt::format("function '{}' node '{}' reads '{}', which is neither a function "
                                "input nor produced in the function",
                                functionName(f), printableName(local), printableName(in)));
      copy.add_input(it->second);
      if (!it->second.empty()) ctx_.readNames.insert(it->second);
    }
    for (const auto& o : inner.output()) copy.add_output(o.empty() ? o : names.at(o));
    for (const auto& a : inner.attribute()) {
      if (a.has_g() || a.graphs_size() > 0 || a.type() == onnx::AttributeProto::GRAPH ||
          a.type() == onnx::AttributeProto::GRAPHS)
        return fail(where,
                    fmt::format("function '{}' node '{}' has a subgraph attribute '{}', which "
                                "kiln does not inline yet",
                                functionName(f), printableName(local), printableName(a.name())),
                    "inline the model's functions (onnx.inliner) before compiling");
      if (a.ref_attr_name().empty()) {
        *copy.add_attribute() = a;
        continue;
      }
      auto given = std::find_if(call.attribute().begin(), call.attribute().end(),
                                [&](const auto& c) { return c.name() == a.ref_attr_name(); });
      if (given == call.attribute().end()) continue;  // not set by the call: the op's default
      if (given->has_g() || given->graphs_size() > 0)
        return fail(where, fmt::format("passes a graph as attribute '{}' to function '{}', "
                                       "which kiln does not inline yet",
                                       printableName(given->name()), functionName(f)));
      onnx::AttributeProto& resolved = *copy.add_attribute();
      resolved = *given;
      resolved.set_name(a.name());
      resolved.clear_ref_attr_name();
    }
    return Status();
  }

  ImportContext& ctx_;
  const Graph& g_;
  std::deque<onnx::NodeProto>& storage_;
  std::vector<InlinedNode>& out_;
  std::vector<const onnx::FunctionProto*> stack_;
};

}  // namespace

Status inlineFunctionCall(const onnx::NodeProto& call, const SourceNodeRef& where,
                          ImportContext& ctx, const Graph& g, std::deque<onnx::NodeProto>& storage,
                          std::vector<InlinedNode>& out) {
  return FunctionInliner(ctx, g, storage, out).expand(call, where);
}

}  // namespace kiln::onnx_import
