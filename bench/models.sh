# models.sh: the benchmarks' models, sourced by latency.sh and plan.sh
# (with $dcz, the dcz binary, and $w, the folder they go to).
#
# make_model NAME (lenet300, lenet5, cnn, resnet, mobilenetv2): untrained
# (latency depends on the structure, not on the weights' values): dcz train
# --epochs 0 of the architecture of samples/recipes/NAME-train.recipe
# ($w/NAME-dense.dcz), pruned to the sparsity rules of
# samples/recipes/NAME-compress.recipe (the LeNets: the paper's densities)
# and quantized to its codebook widths (dcz's defaults where it names none),
# Huffman-coded ($w/NAME.dcz), calibrated for int8 on 500 training samples
# ($w/NAME-int8.dcz), and the dense file exported to ONNX ($w/NAME.onnx).
# ENCODE_FLAGS: more options of the encode (--no-arith: files that readers
# of format 2.1, earlier releases, take).

# the rule KEY of a compress recipe ([compress] section), or empty
rule() { sed -n "/^\[compress\]/,/^\[/s/^$2 = //p" "samples/recipes/$1-compress.recipe" 2>/dev/null | head -1; }

make_model() { # name
    local m=$1 sp bits arch
    case $m in
        lenet300) sp='fc1=0.92,fc2=0.91,fc3=0.74' ;;
        lenet5) sp='conv1=0.34,conv2=0.88,fc1=0.92,fc2=0.81' ;;
        *) sp=$(rule "$m" sparsity) ;;
    esac
    bits=$(rule "$m" bits)
    arch=$(sed -n 's/^arch = //p' "samples/recipes/$m-train.recipe" | head -1)
    "$dcz" train --arch "${arch:-$m}" --epochs 0 --data fashion-mnist -q -o "$w/$m-dense.dcz" &&
        "$dcz" prune "$w/$m-dense.dcz" ${sp:+--sparsity "$sp"} -q -o "$w/$m-pruned.dcz" &&
        "$dcz" quantize "$w/$m-pruned.dcz" ${bits:+--bits "$bits"} -q -o "$w/$m-quant.dcz" &&
        "$dcz" encode "$w/$m-quant.dcz" ${ENCODE_FLAGS:-} -q -o "$w/$m.dcz" &&
        "$dcz" calibrate "$w/$m.dcz" --data fashion-mnist --calib-batches 5 --scheme int8 -q -o "$w/$m-int8.dcz" &&
        "$dcz" export "$w/$m-dense.dcz" -q -o "$w/$m.onnx"
}
