# C[16, 64] = A[32, 16]^T x B[32, 64] in BF16 for the size-8 core (test_core_rtl): four K tiles
# of 8 accumulate in one PSUM bank per M tile of 8; the vector engine evicts each bank to
# BF16; DMA in and out.
.tensor A hbm addr=0x0000 dtype=bf16 shape=32x16 init=random seed=5
.tensor B hbm addr=0x1000 dtype=bf16 shape=32x64 init=random seed=6
.tensor C hbm addr=0x4000 dtype=bf16 shape=16x64 output
.tensor A_sb sbuf addr=0x000 dtype=bf16 shape=8x64
.tensor B_sb sbuf addr=0x100 dtype=bf16 shape=8x256
.tensor C_sb sbuf addr=0x400 dtype=bf16 shape=8x128
.sem loaded
.sem mm_done
.sem out_ready
.queue sp
.rept kt 4
  dma_copy engine=kt dir=hbm_to_sbuf hbm_addr=A+kt*8*32 sbuf_addr=A_sb+kt*32 bytes=32 count1=8 hbm_stride1=32 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=kt+4 dir=hbm_to_sbuf hbm_addr=B+kt*8*128 sbuf_addr=B_sb+kt*128 bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
.rept mt 2
  dma_copy engine=8+mt dir=sbuf_to_hbm hbm_addr=C+mt*8*128 sbuf_addr=C_sb+mt*128 bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION wait=out_ready>=mt+1
.endr
.queue pe
.rept mt 2
  .rept kt 4
    .if kt<3
      nc_matmul dtype=bf16 k=8 m=8 n=64 stationary=A_sb+kt*32+mt*16 moving=B_sb+kt*128 stride=2 psum_bank=mt accumulate=kt>0 wait=loaded>=8
    .else
      nc_matmul dtype=bf16 k=8 m=8 n=64 stationary=A_sb+kt*32+mt*16 moving=B_sb+kt*128 stride=2 psum_bank=mt accumulate=1 signal=mm_done+=1
    .endif
  .endr
.endr
.queue dve
.rept mt 2
  tensor_copy in0=fp32 out=bf16 partitions=8 src0=psum:mt*PSUM_BANK src0_ap=[[1,64]] dst=sbuf:C_sb+mt*128 dst_ap=[[1,64]] wait=mm_done>=mt+1 signal=out_ready+=1
.endr
