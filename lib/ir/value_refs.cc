// Binding of deferred value references once a whole model has been read.
#include "value_refs.h"

#include "text_syntax.h"

namespace kiln::textir {

void ValueRefs::deferInput(Node* node, size_t index, std::string name, std::string where) {
  inputs_.push_back({node, index, std::move(name), std::move(where)});
}

void ValueRefs::setOutputs(Graph* graph, std::vector<std::pair<std::string, std::string>> names) {
  outputs_.push_back({graph, std::move(names)});
}

Status ValueRefs::resolve() {
  for (const PendingInput& p : inputs_) {
    Value* v = p.node->owner()->findValue(p.name);
    if (!v)
      return makeError("{}: value %{} is not defined in this graph or an enclosing one", p.where,
                       quoteForMessage(p.name));
    p.node->setInput(p.index, v);
  }
  for (const PendingOutputs& p : outputs_) {
    std::vector<Value*> outs;
    outs.reserve(p.names.size());
    for (const auto& [name, where] : p.names) {
      Value* v = p.graph->findValue(name);
      if (!v)
        return makeError("{}: graph output %{} is not defined in this graph or an enclosing one",
                         where, quoteForMessage(name));
      outs.push_back(v);
    }
    p.graph->setOutputs(std::move(outs));
  }
  return Status();
}

}  // namespace kiln::textir
