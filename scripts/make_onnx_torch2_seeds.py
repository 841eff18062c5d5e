#!/usr/bin/python3
"""make_onnx_torch2_seeds.py: writes the fuzz seeds of the ONNX importer in
the form torch.onnx.export writes since PyTorch 2.9 (the dynamo exporter):
opset 20, IR version 10, a fixed batch of 2.

Run from the repository root with Debian's python3-onnx (no PyTorch):

    /usr/bin/python3 scripts/make_onnx_torch2_seeds.py

  tests/fuzz/corpus/onnx/torch2_opset20.onnx
      x (2, 2, 4, 4), Conv 3x3, ReduceMean with its axes as an input and
      keepdims, Reshape to (2, C) with allowzero, Gemm with transB
  tests/fuzz/corpus/onnx/torch2_external_opset20.onnx
      the same with the Conv weight as external data in w.data, a file the
      corpus does not hold: the importer must refuse it (the fuzz target
      gives no folder to read external data from)

onnx 1.12's checker knows opsets up to 17 only, so the models are not
checked here; tests/unit/test_onnx.c builds the same forms node by node.
"""
import os

import numpy as np
from onnx import TensorProto, external_data_helper, helper, numpy_helper

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
CORPUS_ONNX = os.path.join(ROOT, "tests", "fuzz", "corpus", "onnx")


def model(external):
    rng = np.random.RandomState(3)
    n = helper.make_node
    wt = numpy_helper.from_array(rng.randn(3, 2, 3, 3).astype(np.float32), "conv.weight")
    if external:
        external_data_helper.set_external_data(wt, "w.data", offset=0, length=len(wt.raw_data))
        wt.ClearField("raw_data")
        wt.data_location = TensorProto.EXTERNAL
    inits = [wt, numpy_helper.from_array(rng.randn(3).astype(np.float32), "conv.bias"),
             numpy_helper.from_array(np.array([-1, -2], np.int64), "axes"),
             numpy_helper.from_array(np.array([2, 3], np.int64), "shape"),
             numpy_helper.from_array(rng.randn(4, 3).astype(np.float32), "fc.weight"),
             numpy_helper.from_array(rng.randn(4).astype(np.float32), "fc.bias")]
    nodes = [n("Conv", ["x", "conv.weight", "conv.bias"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             n("ReduceMean", ["c", "axes"], ["m"], keepdims=1, noop_with_empty_axes=0),
             n("Reshape", ["m", "shape"], ["v"], allowzero=1),
             n("Gemm", ["v", "fc.weight", "fc.bias"], ["y"], transB=1)]
    graph = helper.make_graph(
        nodes, "torch2",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], producer_name="onnx.helper")
    m.ir_version = 10
    return m


def main():
    os.makedirs(CORPUS_ONNX, exist_ok=True)
    for name, external in (("torch2_opset20", False), ("torch2_external_opset20", True)):
        with open(os.path.join(CORPUS_ONNX, name + ".onnx"), "wb") as f:
            f.write(model(external).SerializeToString())


if __name__ == "__main__":
    main()
