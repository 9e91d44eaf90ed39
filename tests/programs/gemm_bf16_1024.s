# Tiled BF16 GEMM, C[1024, 1024] = A[1024, 1024]^T @ B[1024, 1024], FP32 accumulation, BF16 out.
#
# HBM -> SBUF (DMA, 16 engines) -> tensor engine -> PSUM -> vector engine (FP32 -> BF16)
# -> SBUF -> HBM (DMA). Each engine runs its own queue; semaphores carry the dependencies.
#
# C is 8 x 2 output tiles (mt: 128 rows, nt: 512 columns); a tile accumulates 8 K tiles (kt) in
# one PSUM bank. Phase 1 computes the 8 tiles of C's upper half (mt = 0..3, both nt) K tile by
# K tile (kt outer: 8 banks accumulate at once), so the tensor engine starts after a fraction of
# one K tile and every later K tile arrives while it computes. Phase 2 computes the lower half
# (mt = 4..7) tile by tile (kt inner), reusing bank t % 8 once the vector engine has drained
# it. The split balances the DMA: phase 1 loads B and half of A (~100 B/cycle), phase 2 the
# other half of A and stores C (~90 B/cycle), against the core's 4 x 32 B/cycle.
# Tile t: phase 1 t = nt * 4 + mt (the order within a K tile); phase 2 t = 8 + (mt - 4) * 2 + nt.
# Double buffering: PSUM banks (the tensor engine fills one while the vector engine drains
# another), the SBUF output buffer (2 deep) and the input stream (the sync queue issues
# transfer c + 1 before it waits for transfer c).
# Signals: a tensor-engine signal drains the PE array first (~Rows + Cols cycles plus the next
# stationary load), so the tensor engine signals once per four finished tiles in phase 1 and
# once per two in phase 2 (mm_done += 4 or 2); the vector engine still waits for tile t with
# mm_done >= t + 1.
#
# SBUF layout (partition p = k % 128): A at A_sb, B at B_sb, K tile kt at +kt*2048 (1024 BF16
# each; A's M tile mt at +mt*256); output tile t at C_sb + (t % 2) * 1024.
# Transfers, each split over the 16 DMA engines (8 partitions each); each K tile of phase 1
# comes in three, in the order the tensor engine needs them, so that it never waits for a whole
# K tile (384 KiB) and starts after 160 KiB:
#   c = 3kt      B[kt, nt 0] and A[kt, mt 0]
#   c = 3kt + 1  A[kt, mt 1..3]
#   c = 3kt + 2  B[kt, nt 1]
#   c = 24..27   A[every kt, mt = c - 20]           (phase 2's stationaries, one M tile each)
#   and the 16 output tiles back to HBM; transfers 25..27 are interleaved with the stores (the
#   sync queue is in order: stores must not wait behind loads phase 2 needs only later)
# Every DMA engine completes its descriptors in order, so dma<e> >= n means engine e has
# finished its first n signalling lists, and in_ready >= c + 1 that every engine has finished
# transfer c.

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
.rept c 26
  # issue input transfer c (0..24), then wait for transfer c - 1 and publish it
  .if c<24
    .rept e 16
      .if c%3==0
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=B+((c/3)*128+8*e)*ROW sbuf_addr=8*e*SBUF_PARTITION+B_sb+(c/3)*2048 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+((c/3)*128+8*e)*ROW sbuf_addr=8*e*SBUF_PARTITION+A_sb+(c/3)*2048 bytes=256 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
      .endif
      .if c%3==1
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+((c/3)*128+8*e)*ROW+256 sbuf_addr=8*e*SBUF_PARTITION+A_sb+(c/3)*2048+256 bytes=768 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
      .endif
      .if c%3==2
        dma_copy engine=e dir=hbm_to_sbuf hbm_addr=B+((c/3)*128+8*e)*ROW+1024 sbuf_addr=8*e*SBUF_PARTITION+B_sb+(c/3)*2048+1024 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
      .endif
    .endr
  .endif
  .if c==24
    .rept e 16
      dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+8*e*ROW+4*256 sbuf_addr=8*e*SBUF_PARTITION+A_sb+4*256 bytes=256 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION count2=8 hbm_stride2=128*ROW sbuf_stride2=2048 signal=(dma0+e)+=1
    .endr
  .endif
  .if c>0
    .rept e 16
      sem_wait (dma0+e)>=c
    .endr
    sem_signal in_ready
  .endif
.endr
# Output tile t (rows mt * 128.., columns nt * 512.. of C) back to HBM, with transfers 25, 26
# and 27 (phase 2's M tiles 5, 6, 7) issued before tiles 0, 4 and 8 and published after tiles
# 3, 7 and 11. Per DMA engine the lists complete in this order: transfer 25 is its 26th list,
# store t its (27 + t + (t >= 4) + (t >= 8))th, transfer 26 its 31st and transfer 27 its 36th.
.rept t 16
  .if t%4==0&&t<12
    .rept e 16
      dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+8*e*ROW+(5+t/4)*256 sbuf_addr=8*e*SBUF_PARTITION+A_sb+(5+t/4)*256 bytes=256 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION count2=8 hbm_stride2=128*ROW sbuf_stride2=2048 signal=(dma0+e)+=1
    .endr
  .endif
  sem_wait out_ready>=t+1
  .rept e 16
    dma_copy engine=e dir=sbuf_to_hbm hbm_addr=C+(((t<8)*(t%4)+(t>=8)*(4+(t-8)/2))*128+8*e)*ROW+((t<8)*(t/4)+(t>=8)*(t%2))*1024 sbuf_addr=8*e*SBUF_PARTITION+C_sb+(t%2)*1024 bytes=1024 count1=8 hbm_stride1=ROW sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
  .endr
  .rept e 16
    sem_wait (dma0+e)>=27+t+(t>=4)+(t>=8)
  .endr
  sem_signal stored
  .if t%4==3&&t<12
    .rept e 16
      sem_wait (dma0+e)>=26+5*(t/4)
    .endr
    sem_signal in_ready
  .endif
.endr

# ---- tensor engine -------------------------------------------------------------------------
.queue pe
# phase 1: C's upper half, K tile by K tile, tile t = nt * 4 + mt in bank t. K tile kt's operands
# arrive in transfers 3kt (tile 0), 3kt + 1 (tiles 1-3) and 3kt + 2 (tiles 4-7).
.rept kt 8
  .rept nt 2
    .rept mt 4
      .if kt==7&&mt==3
        nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048+nt*1024 stride=2 psum_bank=nt*4+mt accumulate=1 wait=in_ready>=3*kt+1+(mt+nt>0)+(nt>0) signal=mm_done+=4
      .else
        nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+mt*256 moving=B_sb+kt*2048+nt*1024 stride=2 psum_bank=nt*4+mt accumulate=kt>0 wait=in_ready>=3*kt+1+(mt+nt>0)+(nt>0)
      .endif
    .endr
  .endr
.endr
# phase 2: C's lower half, tile by tile: tile t = 8 + u in bank u, free once tile u has been
# converted; M tile mt = 4 + u / 2, whose stationaries arrive in transfer mt + 6
.rept u 8
  sem_wait out_ready>=u+1
  .rept kt 8
    .if kt==7&&u%2==1
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+(4+u/2)*256 moving=B_sb+kt*2048+(u%2)*1024 stride=2 psum_bank=u accumulate=1 wait=in_ready>=25+u/2 signal=mm_done+=2
    .else
      nc_matmul dtype=bf16 k=128 m=128 n=512 stationary=A_sb+kt*2048+(4+u/2)*256 moving=B_sb+kt*2048+(u%2)*1024 stride=2 psum_bank=u accumulate=kt>0 wait=in_ready>=25+u/2
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
