# One attention-head tile: O = softmax(Q K^T / sqrt(d)) V for 128 queries, 128 keys, d = 128,
# BF16 in and out, FP32 in PSUM.
# The tensor engine contracts over partitions, so the program keeps d on partitions for the
# scores and keys on partitions for the second product:
#   pe   S^T[k, q] = sum_d KT[d, k] QT[d, q]             (QT, KT: Q and K stored transposed)
#   act  E^T = exp(S^T / sqrt(d)), BF16                  (read straight from PSUM)
#   pe   U[q, 0:128] = sum_k E^T[k, q] V[k, :], and U[q, 128] = sum_k E^T[k, q] (a ones
#        column appended to V gives the softmax denominators in the same pass)
#   act  r[q] = 1 / U[q, 128]
#   dve  O[q, :] = U[q, 0:128] * r[q], BF16
# The softmax here does not subtract the row maximum: with these inputs |S| / sqrt(d) stays
# far below exp's overflow at 88. A kernel for arbitrary scores subtracts a running maximum
# (flash attention), which needs the per-query maximum broadcast along the free axis of S^T.
# sp moves the inputs with 16 DMA engines (8 rows each) and the output once it is ready.

.tensor QT  hbm addr=0x00000 dtype=bf16 shape=128x128 init=random seed=41
.tensor KT  hbm addr=0x08000 dtype=bf16 shape=128x128 init=random seed=42
.tensor V   hbm addr=0x10000 dtype=bf16 shape=128x128 init=random seed=43
.tensor O   hbm addr=0x18000 dtype=bf16 shape=128x128 output
.tensor QT_sb sbuf addr=0x000 dtype=bf16 shape=128x128
.tensor KT_sb sbuf addr=0x100 dtype=bf16 shape=128x128
.tensor V_sb  sbuf addr=0x200 dtype=bf16 shape=128x129     # V and a ones column
.tensor ET_sb sbuf addr=0x400 dtype=bf16 shape=128x128
.tensor r_sb  sbuf addr=0x500 dtype=fp32 shape=128x1
.tensor O_sb  sbuf addr=0x600 dtype=bf16 shape=128x128

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
.sem in_ready    # QT, KT, V in SBUF
.sem ones        # the ones column written
.sem s_done      # S^T in PSUM bank 0
.sem e_done      # E^T in SBUF
.sem u_done      # U in PSUM bank 1
.sem r_done      # r in SBUF
.sem o_ready     # O in SBUF

.queue sp
.rept e 16
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=QT+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+QT_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=KT+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+KT_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=V+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+V_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION signal=(dma0+e)+=1
.endr
.rept e 16
  sem_wait (dma0+e)>=1
.endr
sem_signal in_ready
.rept e 16
  dma_copy engine=e dir=sbuf_to_hbm hbm_addr=O+8*e*256 sbuf_addr=8*e*SBUF_PARTITION+O_sb bytes=256 count1=8 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION wait=o_ready>=1
.endr

.queue pe
nc_matmul dtype=bf16 k=128 m=128 n=128 stationary=KT_sb moving=QT_sb stride=2 psum_bank=0 wait=in_ready>=1 signal=s_done+=1
sem_wait ones>=1
nc_matmul dtype=bf16 k=128 m=128 n=129 stationary=ET_sb moving=V_sb stride=2 psum_bank=1 wait=e_done>=1 signal=u_done+=1

.queue act
activation func=exp scale=bits:0x3db504f3 in0=fp32 out=bf16 partitions=128 src0=psum:0 src0_ap=[[1,128]] dst=sbuf:ET_sb dst_ap=[[1,128]] wait=s_done>=1 signal=e_done+=1
activation func=reciprocal in0=fp32 out=fp32 partitions=128 src0=psum:PSUM_BANK+128*4 src0_ap=[[1,1]] dst=sbuf:r_sb dst_ap=[[1,1]] wait=u_done>=1 signal=r_done+=1

.queue dve
tensor_scalar op0=multiply s0=0 op1=add s1=1 in0=bf16 out=bf16 partitions=128 src0=sbuf:V_sb+256 src0_ap=[[1,1]] dst=sbuf:V_sb+256 dst_ap=[[1,1]] signal=ones+=1
tensor_scalar op0=multiply s0=sbuf:r_sb in0=fp32 out=bf16 partitions=128 src0=psum:PSUM_BANK src0_ap=[[1,128]] dst=sbuf:O_sb dst_ap=[[1,128]] wait=r_done>=1 signal=o_ready+=1
