// ONNX import (pending).
namespace kiln {}
