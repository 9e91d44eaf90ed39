"""Matrix multiplication result = lhsT.T @ rhs in four styles, from one tile to blocked loops.

lhsT is [K, M] (K on partitions, as the tensor engine's stationary takes it), rhs [K, N]; the
result [M, N] is FP32, accumulated in PSUM over K tiles.
"""
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_basic(lhsT, rhs):
    """One tile: K and M at most the partitions, N at most one PSUM bank (512 FP32). The product
    is stored straight from PSUM (ncore copies it to SBUF for the DMA)."""
    result = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    lhsT_tile = nl.load(lhsT)
    rhs_tile = nl.load(rhs)
    product = nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
    nl.store(result, value=product)
    return result


@nki.jit
def matmul_tiled(lhsT, rhs):
    """Loops over M, N and K tiles, loading both operands' tiles inside the K loop."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N)
    for m in nl.affine_range(M // tile_m):
        for n in nl.affine_range(N // tile_n):
            acc = nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // tile_k):
                lhsT_tile = nl.load(lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
                rhs_tile = nl.load(rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
                acc += nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
            nl.store(result[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n], value=nl.copy(acc))
    return result


@nki.jit
def matmul_hoisted(lhsT, rhs):
    """The stationary tiles of an M tile are loaded once, outside the N loop."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N)
    for m in nl.affine_range(M // tile_m):
        lhsT_tiles = [nl.load(lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
                      for k in nl.affine_range(K // tile_k)]
        for n in nl.affine_range(N // tile_n):
            acc = nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // tile_k):
                rhs_tile = nl.load(rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
                acc += nl.matmul(lhsT_tiles[k], rhs_tile, transpose_x=True)
            nl.store(result[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n], value=nl.copy(acc))
    return result


@nki.jit
def matmul_block_tiles(lhsT, rhs):
    """matmul_hoisted as the legacy tutorials write it: each operand's K tiles in one tile with a
    block dimension in front of its partitions (nl.par_dim), filled and read block by block."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N)
    for m in nl.affine_range(M // tile_m):
        lhsT_tiles = nl.ndarray((K // tile_k, nl.par_dim(tile_k), tile_m), dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // tile_k):
            lhsT_tiles[k] = nl.load(lhsT[k * tile_k:(k + 1) * tile_k, m * tile_m:(m + 1) * tile_m])
        for n in nl.affine_range(N // tile_n):
            rhs_tiles = nl.ndarray((K // tile_k, nl.par_dim(tile_k), tile_n), dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // tile_k):
                rhs_tiles[k, :, :] = nl.load(rhs[k * tile_k:(k + 1) * tile_k, n * tile_n:(n + 1) * tile_n])
            acc = nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // tile_k):
                acc += nl.matmul(lhsT_tiles[k], rhs_tiles[k, :, :], transpose_x=True)
            nl.store(result[m * tile_m:(m + 1) * tile_m, n * tile_n:(n + 1) * tile_n], value=nl.copy(acc))
    return result


@nki.jit
def matmul_blocked(lhsT, rhs, tiles_in_block_n=2):
    """The free dimension N in blocks of several PSUM banks: each K tile of rhs is loaded once per
    block as one wide tile, and every M tile accumulates its block's banks in PSUM."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N // tiles_in_block_n)
    block_n = tile_n * tiles_in_block_n
    lhsT_tiles = [nl.load(lhsT[k * tile_k:(k + 1) * tile_k, 0:M]) for k in nl.affine_range(K // tile_k)]
    for b in nl.affine_range(N // block_n):
        rhs_tiles = [nl.load(rhs[k * tile_k:(k + 1) * tile_k, b * block_n:(b + 1) * block_n])
                     for k in nl.affine_range(K // tile_k)]
        for m in nl.affine_range(M // tile_m):
            banks = [nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum) for _ in range(tiles_in_block_n)]
            for k in nl.affine_range(K // tile_k):
                for j in nl.affine_range(tiles_in_block_n):
                    banks[j] += nl.matmul(lhsT_tiles[k][:, m * tile_m:(m + 1) * tile_m],
                                          rhs_tiles[k][:, j * tile_n:(j + 1) * tile_n], transpose_x=True)
            for j in nl.affine_range(tiles_in_block_n):
                n0 = b * block_n + j * tile_n
                nl.store(result[m * tile_m:(m + 1) * tile_m, n0:n0 + tile_n], value=nl.copy(banks[j]))
    return result


@nki.jit
def matmul_block_free(lhsT, rhs, tiles_in_block_m=4, tiles_in_block_n=2):
    """The tutorial's third kernel, blocking the free dimensions: for each block of M and block
    of N, all K tiles of both blocks are loaded (as wide tiles), and each [tile_m, tile_n]
    result tile of the block pair accumulates its K tiles in PSUM. Unlike matmul_blocked, no
    operand stays loaded across blocks, so SBUF holds two blocks at a time at any size of K."""
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    tile_k, tile_m = nl.tile_size.pmax, nl.tile_size.gemm_stationary_fmax
    tile_n = min(nl.tile_size.gemm_moving_fmax, N // tiles_in_block_n)
    block_m, block_n = tile_m * tiles_in_block_m, tile_n * tiles_in_block_n
    for mb in nl.affine_range(M // block_m):
        lhsT_tiles = [nl.load(lhsT[k * tile_k:(k + 1) * tile_k, mb * block_m:(mb + 1) * block_m])
                      for k in nl.affine_range(K // tile_k)]
        for nb in nl.affine_range(N // block_n):
            rhs_tiles = [nl.load(rhs[k * tile_k:(k + 1) * tile_k, nb * block_n:(nb + 1) * block_n])
                         for k in nl.affine_range(K // tile_k)]
            for m in nl.affine_range(tiles_in_block_m):
                for n in nl.affine_range(tiles_in_block_n):
                    acc = nl.zeros((tile_m, tile_n), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // tile_k):
                        acc += nl.matmul(lhsT_tiles[k][:, m * tile_m:(m + 1) * tile_m],
                                         rhs_tiles[k][:, n * tile_n:(n + 1) * tile_n], transpose_x=True)
                    m0, n0 = mb * block_m + m * tile_m, nb * block_n + n * tile_n
                    nl.store(result[m0:m0 + tile_m, n0:n0 + tile_n], value=nl.copy(acc))
    return result
