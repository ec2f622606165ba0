// Model <-> JSON values for the .kiln sections (stored as CBOR); tensors go through callbacks.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/support/status.h"

namespace kiln::kilnfmt {

using nlohmann::json;

/// Stores the data of a numeric tensor (weights section or safetensors file) and returns the
/// fields locating it; the codec adds "dtype" and "dims". String tensors stay inline.
/// `nameHint` is the initializer's name, or "" for a tensor attribute.
using TensorSink = std::function<json(const Tensor&, const std::string& nameHint)>;
/// Rebuilds a numeric tensor of the given type from the fields its sink wrote.
using TensorSource =
    std::function<Expected<Tensor>(const json& ref, DType dtype, std::vector<int64_t> dims)>;

json encodeMetadata(const ModelMetadata& m);
json encodeHints(const ModelMetadata& m);
/// Graph inputs and outputs with their types, for tools that only need the signature.
json encodeSignature(const Graph& g);
json encodeGraph(const Graph& g, const TensorSink& sink);
json encodeType(const TensorType& t);

// Decoders throw nlohmann::json exceptions on malformed structure (the caller catches them
// and reports a corrupted section); semantic problems come back as Errors.
Status decodeMetadata(const json& j, ModelMetadata& m);
Status decodeHints(const json& j, ModelMetadata& m);
/// Fails once the graph and its subgraphs hold more than maxNodes nodes.
Expected<std::shared_ptr<Graph>> decodeGraph(const json& j, Graph* parent,
                                             const TensorSource& source, int64_t maxNodes);
/// Checks that the signature section names the graph's inputs and outputs with their types.
Status checkSignature(const json& j, const Graph& g);

/// Parses CBOR, refusing nesting deeper than `maxDepth` first (nlohmann's CBOR reader
/// recurses per level) and reporting malformed input as an Error rather than an exception.
Expected<json> parseCbor(const uint8_t* data, size_t size, int maxDepth);

}  // namespace kiln::kilnfmt
