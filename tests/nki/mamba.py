"""The selective scan of a Mamba layer, written the way the legacy fused-Mamba tutorial is:
delta and u tiles loaded once per channel tile, a column of A as the activation's per-partition
scale (exp(delta A)), rows of B and C broadcast over the partitions, tensor_tensor_scan for the
recurrence (carried from chunk to chunk), and the products accumulated in a PSUM tile with +=.
"""
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def mamba_kernel(delta, u, A, B, C):
    """out[b, c, t] = sum over states s of C[b, s, t] h_s[b, c, t], where h_s[t] =
    exp(delta[t] A[c, s]) h_s[t - 1] + delta[t] u[t] B[b, s, t]: delta and u [batch, channels,
    seq], A [channels, states], B and C [batch, states, seq]; channels a multiple of the
    partitions, seq of the chunk (512, or seq when shorter)."""
    batch, channels, seq = delta.shape
    out = nl.ndarray((batch, channels, seq), dtype=delta.dtype, buffer=nl.shared_hbm)
    _, states = A.shape
    P = nl.tile_size.pmax
    chunk = min(512, seq)
    for b in nl.affine_range(batch):
        for ct in nl.affine_range(channels // P):
            c0 = ct * P
            acc = nl.zeros((nl.par_dim(P), seq), dtype=delta.dtype)
            d_t = nl.load(delta[b, c0:c0 + P, 0:seq])
            u_t = nl.load(u[b, c0:c0 + P, 0:seq])
            for s in nl.affine_range(states):
                a_col = nl.load(A[c0:c0 + P, s])
                carry = nl.zeros((P, 1), dtype=d_t.dtype)
                for k in nl.static_range(seq // chunk):
                    k0 = k * chunk
                    dA = nisa.activation(op=nl.exp, data=d_t[0:P, k0:k0 + chunk], scale=a_col)
                    b_row = nl.load(B[b, s:s + 1, k0:k0 + chunk])
                    du = nisa.tensor_tensor(d_t[0:P, k0:k0 + chunk], u_t[0:P, k0:k0 + chunk], op=nl.multiply)
                    dBu = nisa.tensor_tensor(du, b_row.broadcast_to((P, chunk)), op=nl.multiply)
                    h = nisa.tensor_tensor_scan(dA, dBu, initial=carry, op0=np.multiply, op1=np.add)
                    carry[...] = h[0:P, chunk - 1]
                    c_row = nl.load(C[b, s:s + 1, k0:k0 + chunk])
                    y = nl.ndarray((P, chunk), dtype=delta.dtype, buffer=nl.psum)
                    y[...] = nisa.tensor_tensor(h, c_row.broadcast_to((P, chunk)), op=nl.multiply)
                    acc[0:P, k0:k0 + chunk] += y
            nl.store(out[b, c0:c0 + P, 0:seq], acc[0:P, 0:seq])
    return out
