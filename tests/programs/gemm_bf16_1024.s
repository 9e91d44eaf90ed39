# Tiled BF16 GEMM, C[1024, 1024] = A[1024, 1024]^T @ B[1024, 1024], FP32 accumulation, BF16 out.
#
# HBM -> SBUF (DMA, 16 engines) -> tensor engine -> PSUM -> vector engine (FP32 -> BF16)
# -> SBUF -> HBM (DMA). Each engine runs its own queue; semaphores carry the dependencies.
#
# Order: phase 1 computes the 8 tiles of C's left half (nt = 0) K tile by K tile (kt outer,
# mt inner: 8 PSUM banks accumulate at once), so the tensor engine starts after one K tile of
# input (384 KiB) and every later K tile arrives while it computes. Phase 2 computes the right
# half (nt = 1) tile by tile (mt outer, kt inner), reusing bank mt once the vector engine has
# drained it. Output tile t = nt * 8 + mt lives in bank t % 8.
# Double buffering: PSUM banks (the tensor engine fills one while the vector engine drains
# another), the SBUF output buffer (2 deep) and the input stream (the sync queue issues
# transfer c + 1 before it waits for transfer c).
#
# SBUF layout (partition p = k % 128): A at A_sb, B at B_sb, K tile kt at +kt*2048 (1024 BF16
# each); output tile t at C_sb + (t % 2) * 1024.
# Transfers, each split over the 16 DMA engines (8 partitions each):
#   c = 0..7   B[kt = c, nt = 0] and A[kt = c, every mt]
#   c = 8      B[every kt, nt = 1]
#   c = 9..24  output tile t = c - 9 back to HBM
# Every DMA engine completes its descriptors in order, so dma<e> >= c + 1 means engine e has
# finished its part of transfer c.

.equ ROW 2048                     # bytes of a 1024-element BF16 row in HBM
.tensor A hbm addr=0x0000000 dtype=bf16 shape=1024x1024 init=random seed=11
.tensor B hbm addr=0x0200000 dtype=bf16 shape=1024x1024 init=random seed=12
.tensor C hbm addr=0x0400000 dtype=bf16 shape=1024x1024 output
.tensor A_sb sbuf addr=0x00000 dtype=bf16 shape=128x8192
.tensor B_sb sbuf addr=0x04000 dtype=bf16 shape=128x8192
.tensor C_sb sbuf addr=0x08000 dtype=bf16 shape=128x1024

.sem dma0
.sem dma1
.sem dma2
.sem dma3
.sem dma4
.sem dma5
.sem dma6
.sem dma7
.sem dma8
.sem dma9
.sem dma10
.sem dma11
.sem dma12
.sem dma13
.sem dma14
.sem dma15
.sem in_ready         # input transfers landed, in order
.sem mm_done          # output tiles accumulated in PSUM
.sem out_ready        # output tiles converted into SBUF (their PSUM bank is free again)
.sem stored           # output tiles written back to HBM

# ---- sync queue: every DMA ---------------------------------------------------------------
.queue sp
.rept c 10
  # issue input transfer c (0..8), then wait for transfer c - 1 and publish it
  .if c<9
    .rept e 16
      .if c<8
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=B+(c*128+8*e)*ROW sbuf_addr=8*e*SBUF_PARTITION+B_sb+c*2048 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+(c*128+8*e)*ROW sbuf_addr=8*e*SBUF_PARTITION+A_sb+c*2048 bytes=2048 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
      .else
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=B+8*e*ROW+1024 sbuf_addr=8*e*SBUF_PARTITION+B_sb+1024 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION count2=8 hbm_stride2=128*ROW sbuf_stride2=2048 signal=(dma0+e)+=1
      .endif
    .endr
  .endif
  .if c>0
    .rept e 16
      sem_wait (dma0+e)>=c
    .endr
    sem_signal in_ready
  .endif
.endr
.rept t 16
  sem_wait out_ready>=t+1
  .rept e 16
    dma_copy engine=e dir=sbuf_to_hbm hbm_addr=C+((t%8)*128+8*e)*ROW+(t/8)*1024 sbuf_addr=8*e*SBUF_PARTITION+C_sb+(t%2)*1024 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
  .endr
  .rept e 16
    sem_wait (dma0+e)>=10+t
  .endr
  sem_signal stored
.endr

# ---- tensor engine -------------------------------------------------------------------------
.queue pe
# phase 1: C[:, 0:512], K tile by K tile into banks 0..7
.rept kt 8
  .rept mt 8
    .if kt<7
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048 stride=2 psum_bank=mt accumulate=kt>0 wait=in_ready>=kt+1
    .else
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048 stride=2 psum_bank=mt accumulate=1 wait=in_ready>=kt+1 signal=mm_done+=1
    .endif
  .endr
.endr
# phase 2: C[:, 512:1024], tile by tile; bank mt is free once tile mt has been converted
.rept mt 8
  sem_wait out_ready>=mt+1
  .rept kt 8
    .if kt<7
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048+1024 stride=2 psum_bank=mt accumulate=kt>0 wait=in_ready>=9
    .else
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048+1024 stride=2 psum_bank=mt accumulate=1 wait=in_ready>=9 signal=mm_done+=1
    .endif
  .endr
.endr

# ---- vector engine: PSUM (FP32) -> SBUF (BF16), tile by tile --------------------------------
.queue dve
.rept t 16
  .if t>=2
    sem_wait stored>=t-1          # SBUF output buffer t % 2 written back to HBM
  .endif
  tensor_copy in0=fp32 out=bf16 partitions=128 src0=psum:(t%8)*PSUM_BANK src0_ap=[[1,512]] dst=sbuf:C_sb+(t%2)*1024 dst_ap=[[1,512]] wait=mm_done>=t+1 signal=out_ready+=1
.endr
