# FP8 GEMM in double-row mode: C[512, 512] (BF16) = A[512, 512]^T x B[512, 512], A and B E4M3.
# A is [K, M], B is [K, N], C is [M, N]. Double-row mode contracts 256 rows per pass: each
# partition p holds rows p (replica 0) and 128 + p (replica 1) of a 256-row K tile, replica 1
# F elements after replica 0 (F the instruction's free size), so a K of 512 is two passes.
#   sp   16 DMA engines load A and B (each engine 8 rows of each replica of each K tile), then
#        the output, one 128-row M tile at a time
#   pe   per M tile: two double-row passes accumulate into PSUM bank mt
#   dve  evicts each bank FP32 -> BF16 into SBUF
# SBUF layout (bytes per partition): A_sb holds, per (K tile kt, M tile mt), a 256-byte block
# [replica 0: 128 | replica 1: 128]; B_sb per K tile a 1024-byte block [replica 0: 512 |
# replica 1: 512]; C_sb per M tile 512 BF16.

.tensor A hbm addr=0x000000 dtype=e4m3 shape=512x512 init=random seed=31
.tensor B hbm addr=0x040000 dtype=e4m3 shape=512x512 init=random seed=32
.tensor C hbm addr=0x080000 dtype=bf16 shape=512x512 output
.tensor A_sb sbuf addr=0x0000 dtype=e4m3 shape=128x2048
.tensor B_sb sbuf addr=0x0800 dtype=e4m3 shape=128x2048
.tensor C_sb sbuf addr=0x1000 dtype=bf16 shape=128x2048

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
.sem in_ready     # A and B in SBUF
.sem mm_done      # M tiles accumulated in PSUM
.sem out_ready    # M tiles converted into SBUF

.queue sp
.rept e 16
  .rept kt 2
    .rept r 2
      dma_copy engine=e dir=hbm_to_sbuf hbm_addr=A+(kt*256+r*128+8*e)*512 sbuf_addr=8*e*SBUF_PARTITION+A_sb+kt*1024+r*128 bytes=128 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION count2=4 hbm_stride2=128 sbuf_stride2=256
      dma_copy engine=e dir=hbm_to_sbuf hbm_addr=B+(kt*256+r*128+8*e)*512 sbuf_addr=8*e*SBUF_PARTITION+B_sb+kt*1024+r*512 bytes=512 count1=8 hbm_stride1=512 sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
    .endr
  .endr
.endr
.rept e 16
  sem_wait (dma0+e)>=4      # each engine's loads complete in order: its fourth signal is its last
.endr
sem_signal in_ready
.rept mt 4
  .rept e 16
    dma_copy engine=e dir=sbuf_to_hbm hbm_addr=C+(mt*128+8*e)*1024 sbuf_addr=8*e*SBUF_PARTITION+C_sb+mt*1024 bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION wait=out_ready>=mt+1
  .endr
.endr

.queue pe
.rept mt 4
  nc_matmul dtype=e4m3 double_row=1 k=128 m=128 n=512 stationary=A_sb+mt*256 moving=B_sb stride=1 psum_bank=mt accumulate=0 wait=in_ready>=1
  nc_matmul dtype=e4m3 double_row=1 k=128 m=128 n=512 stationary=A_sb+(4+mt)*256 moving=B_sb+1024 stride=1 psum_bank=mt accumulate=1 signal=mm_done+=1
.endr

.queue dve
.rept mt 4
  tensor_copy in0=fp32 out=bf16 partitions=128 src0=psum:mt*PSUM_BANK src0_ap=[[1,512]] dst=sbuf:C_sb+mt*1024 dst_ap=[[1,512]] wait=mm_done>=mt+1 signal=out_ready+=1
.endr
