# LayerNorm of a [128, 1024] BF16 tile with BF16 gain g[1024] and bias b[1024]:
#   y[p, :] = (x[p, :] - mean(x[p, :])) * rsqrt(var(x[p, :]) + 1e-5) * g + b
#   dve  stats = bn_stats of x[:, 0:512] and of x[:, 512:1024]   two 6-element groups, FP32
#   dve  mv = bn_aggr(stats): the mean and the (population) variance
#   act  rstd = rsqrt(var + 1e-5)
#   dve  u = (x - mean) * g                 scalar_tensor_tensor, FP32 (while act runs)
#   dve  y = (u * rstd) + b                  scalar_tensor_tensor, BF16
# g and b are broadcast to every partition by DMA (HBM row stride 0).
# tests/check_examples.py compares y with float64 NumPy.

.tensor X  hbm  addr=0x00000 dtype=bf16 shape=128x1024 init=random seed=61
.tensor G  hbm  addr=0x40000 dtype=bf16 shape=1x1024 init=random seed=62
.tensor B  hbm  addr=0x40800 dtype=bf16 shape=1x1024 init=random seed=63
.tensor Y  hbm  addr=0x80000 dtype=bf16 shape=128x1024 output
.tensor x     sbuf addr=0x0000 dtype=bf16 shape=128x1024
.tensor g     sbuf addr=0x0800 dtype=bf16 shape=128x1024
.tensor b     sbuf addr=0x1000 dtype=bf16 shape=128x1024
.tensor stats sbuf addr=0x1800 dtype=fp32 shape=128x12
.tensor mv    sbuf addr=0x1840 dtype=fp32 shape=128x2
.tensor rstd  sbuf addr=0x1848 dtype=fp32 shape=128x1
.tensor u     sbuf addr=0x2000 dtype=fp32 shape=128x1024
.tensor y     sbuf addr=0x3000 dtype=bf16 shape=128x1024

.sem loaded      # 48 descriptors: x, g and b
.sem mv_ready    # mean and variance
.sem rstd_ready
.sem done        # y ready

.queue sp
.rept i 16
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=X+i*8*2048 sbuf_addr=i*8*SBUF_PARTITION+x bytes=2048 count1=8 hbm_stride1=2048 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=G sbuf_addr=i*8*SBUF_PARTITION+g bytes=2048 count1=8 hbm_stride1=0 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=B sbuf_addr=i*8*SBUF_PARTITION+b bytes=2048 count1=8 hbm_stride1=0 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
.rept i 16
  dma_copy engine=i dir=sbuf_to_hbm hbm_addr=Y+i*8*2048 sbuf_addr=i*8*SBUF_PARTITION+y bytes=2048 count1=8 hbm_stride1=2048 sbuf_stride1=SBUF_PARTITION wait=done>=1
.endr

.queue dve
bn_stats in0=bf16 out=fp32 partitions=128 src0=x src0_ap=[[1,512]] dst=stats dst_ap=[[1,6]] wait=loaded>=48
bn_stats in0=bf16 out=fp32 partitions=128 src0=x+1024 src0_ap=[[1,512]] dst=stats+24 dst_ap=[[1,6]]
bn_aggr in0=fp32 out=fp32 partitions=128 src0=stats src0_ap=[[1,12]] dst=mv dst_ap=[[1,2]] signal=mv_ready+=1
scalar_tensor_tensor op0=subtract s0=sbuf:mv op1=multiply in0=bf16 in1=bf16 out=fp32 partitions=128 src0=x src1=g src0_ap=[[1,1024]] src1_ap=[[1,1024]] dst=u dst_ap=[[1,1024]]
scalar_tensor_tensor op0=multiply s0=sbuf:rstd op1=add in0=fp32 in1=bf16 out=bf16 partitions=128 src0=u src1=b src0_ap=[[1,1024]] src1_ap=[[1,1024]] dst=y dst_ap=[[1,1024]] wait=rstd_ready>=1 signal=done+=1

.queue act
activation func=rsqrt scale=1.0 bias=1e-5 partitions=128 src0=mv+4 src0_ap=[[1,1]] dst=rstd dst_ap=[[1,1]] wait=mv_ready>=1 signal=rstd_ready+=1
