# RMSNorm of a [128, 512] BF16 tile with a BF16 gain g[512]:
#   y[p, :] = x[p, :] * rsqrt(sum(x[p, :]^2) / 512 + 1e-6) * g
#   act  square with the row sum (activation_reduce)        -> ss
#   act  rs = rsqrt(ss * (1/512) + 1e-6)
#   dve  xn = x * rs (per-partition scalar); y = xn * g, cast to BF16
# g is broadcast to every partition by DMA (HBM row stride 0).

.tensor X  hbm  addr=0x00000 dtype=bf16 shape=128x512 init=random seed=31
.tensor G  hbm  addr=0x20000 dtype=bf16 shape=1x512 init=random seed=32
.tensor Y  hbm  addr=0x40000 dtype=bf16 shape=128x512 output
.tensor x  sbuf addr=0x0000 dtype=bf16 shape=128x512
.tensor g  sbuf addr=0x0400 dtype=bf16 shape=128x512
.tensor sq sbuf addr=0x0800 dtype=fp32 shape=128x512
.tensor ss sbuf addr=0x1000 dtype=fp32 shape=128x1
.tensor rs sbuf addr=0x1004 dtype=fp32 shape=128x1
.tensor xn sbuf addr=0x1400 dtype=fp32 shape=128x512
.tensor y  sbuf addr=0x1c00 dtype=bf16 shape=128x512

.sem loaded      # 32 descriptors: x and g
.sem normed      # rs ready
.sem done        # y ready

.queue sp
.rept i 16
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=X+i*8*1024 sbuf_addr=i*8*SBUF_PARTITION+x bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=G sbuf_addr=i*8*SBUF_PARTITION+g bytes=1024 count1=8 hbm_stride1=0 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
.rept i 16
  dma_copy engine=i dir=sbuf_to_hbm hbm_addr=Y+i*8*1024 sbuf_addr=i*8*SBUF_PARTITION+y bytes=1024 count1=8 hbm_stride1=1024 sbuf_stride1=SBUF_PARTITION wait=done>=1
.endr

.queue act
activation func=square in0=bf16 out=fp32 partitions=128 src0=x src0_ap=[[1,512]] dst=sq dst_ap=[[1,512]] acc_enable=1 acc_addr=ss wait=loaded>=32
activation func=rsqrt scale=0.001953125 bias=1e-6 partitions=128 src0=ss src0_ap=[[1,1]] dst=rs dst_ap=[[1,1]] signal=normed+=1

.queue dve
tensor_scalar op0=multiply s0=sbuf:rs in0=bf16 out=fp32 partitions=128 src0=x src0_ap=[[1,512]] dst=xn dst_ap=[[1,512]] wait=normed>=1
tensor_tensor op0=multiply in0=fp32 in1=bf16 out=bf16 partitions=128 src0=xn src1=g src0_ap=[[1,512]] src1_ap=[[1,512]] dst=y dst_ap=[[1,512]] signal=done+=1
