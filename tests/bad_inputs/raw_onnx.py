"""Writes ONNX protobuf bytes directly: models too large or too deep for onnx.helper to build
quickly (a million nodes, ten thousand nested subgraphs, a thousand nested messages).

Only the fields these cases need; field numbers are those of onnx.proto.
"""


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1  # negative int64s are ten-byte two's complement varints
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_bytes(number, payload):
    """A length-delimited field (string, bytes or sub-message)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def field_int(number, value):
    return varint(number << 3) + varint(value)


def s(number, text):
    return field_bytes(number, text.encode())


def value_info(name, dims, elem_type=1):
    """ValueInfoProto of a tensor: name=1, type=2 → TypeProto.tensor_type=1 → elem_type=1,
    shape=2 → dim=1 → dim_value=1."""
    shape = b"".join(field_bytes(1, field_int(1, d)) for d in dims)
    tensor = field_int(1, elem_type) + field_bytes(2, shape)
    return s(1, name) + field_bytes(2, field_bytes(1, tensor))


def node(op, inputs, outputs, name="", attrs=b""):
    """NodeProto: input=1, output=2, name=3, op_type=4, attribute=5 (pre-encoded)."""
    body = b"".join(s(1, i) for i in inputs) + b"".join(s(2, o) for o in outputs)
    if name:
        body += s(3, name)
    return body + s(4, op) + attrs


def graph_attr(name, graph_body):
    """AttributeProto of type GRAPH: name=1, g=6, type=20 (GRAPH = 5)."""
    return field_bytes(5, s(1, name) + field_bytes(6, graph_body) + field_int(20, 5))


def graph(node_fields, name, inputs=(), outputs=()):
    """GraphProto from pre-encoded NodeProto bodies: node=1, name=2, input=11, output=12."""
    parts = [field_bytes(1, n) for n in node_fields]
    parts.append(s(2, name))
    parts += [field_bytes(11, v) for v in inputs]
    parts += [field_bytes(12, v) for v in outputs]
    return b"".join(parts)


def model(graph_body, opset=13):
    """ModelProto: ir_version=1, graph=7, opset_import=8 → version=2."""
    return field_int(1, 8) + field_bytes(8, field_int(2, opset)) + field_bytes(7, graph_body)


class Onion:
    """A message nested thousands deep, built from the inside out without copying the inside
    at each level (re-encoding it each time would be quadratic)."""

    def __init__(self, core):
        self.heads, self.tails, self.core, self.length = [], [], core, len(core)

    def wrap(self, number, before=b"", after=b""):
        """The message so far, between `before` and `after`, becomes field `number`."""
        content = len(before) + self.length + len(after)
        self.extend(varint(number << 3 | 2) + varint(content) + before, after)

    def extend(self, before=b"", after=b""):
        """Fields before and after the message so far, at its own level."""
        self.heads.append(before)
        self.tails.append(after)
        self.length += len(before) + len(after)

    def bytes(self):
        return b"".join(reversed(self.heads)) + self.core + b"".join(self.tails)


def identity_chain(count):
    """x → Identity → ... → y, `count` nodes."""
    op = s(4, "Identity")
    nodes = []
    for i in range(count):
        io = s(1, f"v{i}") + s(2, f"v{i + 1}") + op
        nodes.append(varint(1 << 3 | 2) + varint(len(io)) + io)
    tail = s(2, "chain") + field_bytes(11, value_info("v0", [1]))
    tail += field_bytes(12, value_info(f"v{count}", [1]))
    return model(b"".join(nodes) + tail)


def _nest_in_node(onion, attr, node_fields, after_attr=b""):
    """onion (a graph) becomes graph attribute `attr` of a node with node_fields, which
    becomes the node field of a graph: attribute.g=6, node.attribute=5, graph.node=1."""
    onion.wrap(6)
    onion.wrap(5, before=s(1, attr), after=field_int(20, 5))
    onion.wrap(1, before=node_fields, after=after_attr)


def _finish_model(onion, graph_tail):
    onion.extend(after=graph_tail)
    onion.wrap(7)
    onion.extend(before=field_int(1, 8) + field_bytes(8, field_int(2, 13)))
    return onion.bytes()


def nested_if(depth):
    """An If whose then-branch holds an If ... `depth` levels deep; every else-branch and the
    innermost then-branch return x."""
    def leaf(out):
        return graph([node("Identity", ["x"], [out])], out, outputs=[value_info(out, [1])])

    onion = Onion(leaf("e0"))
    for i in range(1, depth + 1):
        out = "y" if i == depth else f"o{i}"
        _nest_in_node(onion, "then_branch", s(1, "c") + s(2, out) + s(4, "If"),
                      after_attr=graph_attr("else_branch", leaf(f"e{i}")))
        if i < depth:
            onion.extend(after=s(2, f"g{i}") + field_bytes(12, value_info(out, [1])))
    inputs = field_bytes(11, value_info("c", [], elem_type=9)) + field_bytes(11, value_info("x", [1]))
    return _finish_model(onion, s(2, "main") + inputs + field_bytes(12, value_info("y", [1])))


def nested_messages(levels):
    """A model whose graph holds a node whose attribute holds a graph ... `levels` messages
    deep in all, with no If around them: the parser itself must stop, not the importer."""
    onion = Onion(b"")
    for i in range(levels // 3):
        _nest_in_node(onion, "g", s(1, "x") + s(2, f"o{i}") + s(4, "Identity"))
    return _finish_model(onion, b"")
