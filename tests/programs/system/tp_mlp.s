# A tensor-parallel MLP block on the 8 cores of a chip (Megatron style): Y = relu(X W1) W2 with
# X [128 tokens x 64], W1 [64 x 512], W2 [512 x 64], all BF16 from .npy (make_inputs.py).
# Core k holds the hidden slice 64k..64k+63: columns of W1, rows of W2. It computes
#   H_k^T = relu(W1_k^T X^T)     [64 x 128]  (tensor engine into PSUM, FP32; scalar engine: relu
#                                             to BF16 in SBUF)
#   P_k   = H_k W2_k             [128 x 64]  (tensor engine, FP32; vector engine to SBUF)
# stores its partial sum P_k to HBM, and an all_reduce over the chip's cores (group cores) sums
# the 8 partials into Y on every core, in FP32 in rank order. tests/test_system_run.cpp checks
# Y against relu(X W1) W2 computed in float64 from the same .npy files.
.equ STEPS 1                   # steps, one after another (a step's loads wait for the last
                               # step's all_reduce); scripts/system_bench --long sets STEPS so
                               # that the run lasts a simulated millisecond (issue 50)
.equ T 128                     # tokens (the second matmul's M, its PSUM partitions)
.equ D 64                      # model width
.equ F 512                     # hidden width
.equ FK F/CORES                # this core's hidden slice
.equ BASE 0x100000+CORE*0x20000
# Inputs: one copy in the chip's HBM, shared by its cores (each writes the same bytes at load).
.tensor XT hbm addr=0x00000 dtype=bf16 shape=64x128 init=file:mlp_xt.npy
.tensor W1 hbm addr=0x10000 dtype=bf16 shape=64x512 init=file:mlp_w1.npy
.tensor W2 hbm addr=0x20000 dtype=bf16 shape=512x64 init=file:mlp_w2.npy
# This core's partial sum and the reduced result.
.tensor P hbm addr=BASE dtype=fp32 shape=128x64
.tensor Y hbm addr=BASE+0x10000 dtype=fp32 shape=128x64 output
# SBUF (per-partition byte offsets)
.tensor XT_sb sbuf addr=0x000 dtype=bf16 shape=64x128
.tensor W1_sb sbuf addr=0x100 dtype=bf16 shape=64x64
.tensor HT_sb sbuf addr=0x200 dtype=bf16 shape=64x128
.tensor W2_sb sbuf addr=0x300 dtype=bf16 shape=64x64
.tensor P_sb  sbuf addr=0x400 dtype=fp32 shape=128x64
.sem loaded     # 12 input loads
.sem h_done     # H_k^T in PSUM bank 0
.sem h_ready    # relu(H_k^T) in SBUF
.sem p_done     # P_k in PSUM bank 1
.sem p_ready    # P_k in SBUF
.sem stored     # 8 stores of P_k
.sem reduced    # Y

.queue sp
.rept s STEPS
# X^T, W1's columns 64k.. and W2's rows 64k.., 16 partitions per descriptor on 12 engines.
.if s>0
  nop wait=reduced>=s
.endif
.rept e 4
  dma_copy engine=e dir=hbm_to_sbuf hbm_addr=XT+e*16*T*2 sbuf_addr=e*16*SBUF_PARTITION+XT_sb bytes=T*2 count1=16 hbm_stride1=T*2 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=4+e dir=hbm_to_sbuf hbm_addr=W1+e*16*F*2+CORE*FK*2 sbuf_addr=e*16*SBUF_PARTITION+W1_sb bytes=FK*2 count1=16 hbm_stride1=F*2 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
  dma_copy engine=8+e dir=hbm_to_sbuf hbm_addr=W2+(CORE*FK+e*16)*D*2 sbuf_addr=e*16*SBUF_PARTITION+W2_sb bytes=D*2 count1=16 hbm_stride1=D*2 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.endr
# P_k out, 16 partitions per descriptor on 8 engines.
.rept e 8
  dma_copy engine=e dir=sbuf_to_hbm hbm_addr=P+e*16*D*4 sbuf_addr=e*16*SBUF_PARTITION+P_sb bytes=D*4 count1=16 hbm_stride1=D*4 sbuf_stride1=SBUF_PARTITION wait=p_ready>=s+1 signal=stored+=1
.endr
.endr

.queue pe
.rept s STEPS
# H_k^T = W1_k^T X^T: stationary W1_k (K = D, M = FK), moving X^T (N = T).
nc_matmul dtype=bf16 k=D m=FK n=T stationary=W1_sb moving=XT_sb stride=2 psum_bank=0 wait=loaded>=12*(s+1) signal=h_done+=1
# P_k = H_k W2_k: stationary H_k^T (K = FK, M = T), moving W2_k (N = D).
nc_matmul dtype=bf16 k=FK m=T n=D stationary=HT_sb moving=W2_sb stride=2 psum_bank=1 wait=h_ready>=s+1 signal=p_done+=1
.endr

.queue act
.rept s STEPS
activation func=relu in0=fp32 out=bf16 partitions=FK src0=psum:0 src0_ap=[[1,T]] dst=sbuf:HT_sb dst_ap=[[1,T]] wait=h_done>=s+1 signal=h_ready+=1
.endr

.queue dve
.rept s STEPS
tensor_copy in0=fp32 out=fp32 partitions=T src0=psum:PSUM_BANK src0_ap=[[1,D]] dst=sbuf:P_sb dst_ap=[[1,D]] wait=p_done>=s+1 signal=p_ready+=1
.endr

.queue cc
.rept s STEPS
all_reduce dtype=fp32 src=P dst=Y bytes=T*D*4 group=cores wait=stored>=8*(s+1) signal=reduced+=1
.endr
