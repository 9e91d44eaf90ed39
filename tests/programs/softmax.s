# Row softmax of a [128, 512] BF16 tile: y[p, :] = exp(x[p, :] - max x[p, :]) / sum(...).
# One row per partition; FP32 in between, BF16 out.
#   dve  max along the free axis, negated                        -> nmx
#   act  e = exp(x * 1 + nmx) with the row sum (activation_reduce) -> e, sum; r = 1 / sum
#   dve  y = e * r (per-partition scalar), cast to BF16
# The input and output each move as 16 DMA descriptors of 8 rows (one per DMA engine).

.tensor X   hbm  addr=0x00000 dtype=bf16 shape=128x512 init=random seed=21
.tensor Y   hbm  addr=0x20000 dtype=bf16 shape=128x512 output
.tensor x   sbuf addr=0x0000 dtype=bf16 shape=128x512
.tensor mx  sbuf addr=0x0400 dtype=fp32 shape=128x1
.tensor nmx sbuf addr=0x0404 dtype=fp32 shape=128x1
.tensor e   sbuf addr=0x0800 dtype=fp32 shape=128x512
.tensor sum sbuf addr=0x1000 dtype=fp32 shape=128x1
.tensor r   sbuf addr=0x1004 dtype=fp32 shape=128x1
.tensor y   sbuf addr=0x1400 dtype=bf16 shape=128x512

.sem loaded      # input descriptors landed (16)
.sem reduced     # nmx ready
.sem exped       # e and r ready
.sem scaled      # y ready

.queue sp
.rept i 16
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=X+i*8*1024 sbuf_addr=i*8*SBUF_PARTITION+x bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
.rept i 16
  dma_copy engine=i dir=sbuf_to_hbm hbm_addr=Y+i*8*1024 sbuf_addr=i*8*SBUF_PARTITION+y bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION wait=scaled>=1
.endr

.queue dve
tensor_reduce op0=max in0=bf16 out=fp32 partitions=128 src0=x src0_ap=[[1,512]] dst=mx dst_ap=[[1,1]] wait=loaded>=16
tensor_scalar op0=multiply s0=-1 partitions=128 src0=mx src0_ap=[[1,1]] dst=nmx dst_ap=[[1,1]] signal=reduced+=1
tensor_scalar op0=multiply s0=sbuf:r in0=fp32 out=bf16 partitions=128 src0=e src0_ap=[[1,512]] dst=y dst_ap=[[1,512]] wait=exped>=1 signal=scaled+=1

.queue act
activation func=exp scale=1.0 bias=sbuf:nmx in0=bf16 out=fp32 partitions=128 src0=x src0_ap=[[1,512]] dst=e dst_ap=[[1,512]] acc_enable=1 acc_addr=sum wait=reduced>=1
activation func=reciprocal partitions=128 src0=sum src0_ap=[[1,1]] dst=r dst_ap=[[1,1]] signal=exped+=1
