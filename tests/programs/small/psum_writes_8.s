# Vector- and scalar-engine writes to PSUM on the size-8 core (test_core_rtl):
#   dve  bias (FP32) -> PSUM bank 0; the tensor engine then accumulates C = A^T B on top of it
#   act  bias -> BF16 into PSUM bank 1 (2-byte writes), dve -> E4M3 into bank 2 (1-byte writes)
#   dve  reads all three banks back to SBUF; DMA stores them.
.tensor A    hbm addr=0x0000 dtype=bf16 shape=8x8 init=random seed=7
.tensor B    hbm addr=0x0100 dtype=bf16 shape=8x64 init=random seed=8
.tensor Bias hbm addr=0x0800 dtype=fp32 shape=8x64 init=random seed=9
.tensor C    hbm addr=0x1000 dtype=fp32 shape=8x64 output
.tensor H    hbm addr=0x1800 dtype=bf16 shape=8x64 output
.tensor Q    hbm addr=0x1c00 dtype=e4m3 shape=8x64 output
.tensor A_sb sbuf addr=0x000 dtype=bf16 shape=8x8
.tensor B_sb sbuf addr=0x020 dtype=bf16 shape=8x64
.tensor Bias_sb sbuf addr=0x0a0 dtype=fp32 shape=8x64
.tensor C_sb sbuf addr=0x1a0 dtype=fp32 shape=8x64
.tensor H_sb sbuf addr=0x2a0 dtype=bf16 shape=8x64
.tensor Q_sb sbuf addr=0x320 dtype=e4m3 shape=8x64
.sem loaded      # 3 lists
.sem bias_in     # bias in bank 0
.sem mm_done
.sem act_done
.sem out_ready   # 3 banks read back

.queue sp
dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=A sbuf_addr=A_sb bytes=32 count1=8 hbm_stride1=32 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
dma_copy engine=1 dir=hbm_to_sbuf hbm_addr=B sbuf_addr=B_sb bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
dma_copy engine=2 dir=hbm_to_sbuf hbm_addr=Bias sbuf_addr=Bias_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
dma_copy engine=3 dir=sbuf_to_hbm hbm_addr=C sbuf_addr=C_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION wait=out_ready>=3
dma_copy engine=4 dir=sbuf_to_hbm hbm_addr=H sbuf_addr=H_sb bytes=128 count1=8 hbm_stride1=128 sbuf_stride1=SBUF_PARTITION
dma_copy engine=5 dir=sbuf_to_hbm hbm_addr=Q sbuf_addr=Q_sb bytes=64 count1=8 hbm_stride1=64 sbuf_stride1=SBUF_PARTITION

.queue dve
tensor_copy in0=fp32 out=fp32 partitions=8 src0=sbuf:Bias_sb src0_ap=[[1,64]] dst=psum:0 dst_ap=[[1,64]] wait=loaded>=3 signal=bias_in+=1
tensor_copy in0=fp32 out=e4m3 partitions=8 src0=sbuf:Bias_sb src0_ap=[[1,64]] dst=psum:2*PSUM_BANK dst_ap=[[1,64]]
tensor_copy in0=fp32 out=fp32 partitions=8 src0=psum:0 src0_ap=[[1,64]] dst=sbuf:C_sb dst_ap=[[1,64]] wait=mm_done>=1 signal=out_ready+=1
tensor_copy in0=bf16 out=bf16 partitions=8 src0=psum:PSUM_BANK src0_ap=[[1,64]] dst=sbuf:H_sb dst_ap=[[1,64]] wait=act_done>=1 signal=out_ready+=1
tensor_copy in0=e4m3 out=e4m3 partitions=8 src0=psum:2*PSUM_BANK src0_ap=[[1,64]] dst=sbuf:Q_sb dst_ap=[[1,64]] signal=out_ready+=1

.queue act
activation func=identity in0=fp32 out=bf16 partitions=8 src0=sbuf:Bias_sb src0_ap=[[1,64]] dst=psum:PSUM_BANK dst_ap=[[1,64]] wait=loaded>=3 signal=act_done+=1

.queue pe
nc_matmul dtype=bf16 k=8 m=8 n=64 stationary=A_sb moving=B_sb stride=2 psum_bank=0 accumulate=1 wait=bias_in>=1 signal=mm_done+=1
