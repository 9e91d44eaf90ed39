"""result = lhsT.T @ rhs in the current dialect, as AWS's current tutorials write it: SBUF tiles
filled by nisa.dma_copy, nisa.nc_matmul into a PSUM tile, nisa.tensor_copy back to SBUF.

lhsT is [K, M] (K on the partitions), rhs [K, N]; the result [M, N] is FP32.
"""
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    """A PSUM tile per output tile: its first nc_matmul overwrites it and the next ones
    accumulate (accumulate=None, NKI's default)."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N)
    for m in nl.affine_range(M // tile_m):
        for n in nl.affine_range(N // tile_n):
            acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // tile_k):
                a = nl.ndarray((tile_k, tile_m), dtype=lhsT.dtype, buffer=nl.sbuf)
                b = nl.ndarray((tile_k, tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=a, src=lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
                nisa.dma_copy(dst=b, src=rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
                nisa.nc_matmul(dst=acc, stationary=a, moving=b)
            out = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.sbuf)
            nisa.tensor_copy(dst=out, src=acc)
            nisa.dma_copy(dst=result[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n], src=out)
    return result


@nki.jit
def matmul_into(lhsT, rhs, result):
    """The result is an argument, written in place; one PSUM tile serves every output tile, so
    each group says where it starts (accumulate=k > 0). The stationary tiles of an M tile are
    loaded once, into one SBUF tile [K tile, K tiles, M tile]."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N)
    kt = K // tile_k
    acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
    for m in nl.affine_range(M // tile_m):
        a = nl.ndarray((tile_k, kt, tile_m), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
        for n in nl.affine_range(N // tile_n):
            for k in nl.affine_range(kt):
                b = nl.ndarray((tile_k, tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=b, src=rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
                nisa.nc_matmul(acc, a[:, k, :], b, accumulate=k > 0)
            out = nl.ndarray((tile_m, tile_n), dtype=result.dtype, buffer=nl.sbuf)
            nisa.tensor_copy(out, acc)
            nisa.dma_copy(result[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n], out)


@nki.jit
def matmul_fully_blocked(lhsT, rhs, block_m=512, block_n=512):
    """The tutorials' production shapes ([4096, 8192] @ [8192, 8192]): neither operand fits SBUF,
    so both are taken in blocks. A block of rhs columns [K, block_n] is loaded once (K / 128
    tiles side by side in one SBUF tile); for it, each block of lhsT columns [K, block_m] is
    loaded and every [128, block_n] output tile accumulates its K / 128 matmuls in PSUM."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, block_n)
    kt = K // tile_k
    for nb in nl.affine_range(N // block_n):
        b = nl.ndarray((tile_k, kt, block_n), dtype=rhs.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(kt):
            nisa.dma_copy(dst=b[:, k, :], src=rhs[k * tile_k:(k + 1) * tile_k, nb * block_n:(nb + 1) * block_n])
        for mb in nl.affine_range(M // block_m):
            a = nl.ndarray((tile_k, kt, block_m), dtype=lhsT.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(kt):
                nisa.dma_copy(dst=a[:, k, :], src=lhsT[k * tile_k:(k + 1) * tile_k, mb * block_m:(mb + 1) * block_m])
            for m in nl.affine_range(block_m // tile_m):
                for n in nl.affine_range(block_n // tile_n):
                    acc = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(kt):
                        nisa.nc_matmul(dst=acc, stationary=a[:, k, m * tile_m:(m + 1) * tile_m],
                                       moving=b[:, k, n * tile_n:(n + 1) * tile_n])
                    out = nl.ndarray((tile_m, tile_n), dtype=nl.float32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=out, src=acc)
                    m0, n0 = mb * block_m + m * tile_m, nb * block_n + n * tile_n
                    nisa.dma_copy(dst=result[m0:m0 + tile_m, n0:n0 + tile_n], src=out)
    return result
