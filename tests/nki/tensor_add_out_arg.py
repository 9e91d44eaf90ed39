"""Tensor addition in NKI's older style: the output array is an argument, filled in place."""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tensor_add_out_arg_kernel(a_input, b_input, c_output):
    """c_output = a_input + b_input, [pmax, cols]; returns nothing."""
    nl.store(c_output, value=nl.add(nl.load(a_input), nl.load(b_input)))
