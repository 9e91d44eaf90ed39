# A data-parallel training step's weight gradients on every core of every chip: for each of 4
# layers, core (CHIP, CORE) computes dW_l = X^T dY over its own 64 tokens (rows 4 RANK + l ..
# +63 of the activation and gradient pools in dp_x.npy / dp_dy.npy, RANK = CHIP x CORES + CORE),
# stores it to HBM, and all-reduces it over the cores with its CORE on every chip (group chips,
# algo multiring: every link of the torus busy). A layer's all_reduce runs while the next
# layers compute: nothing on pe, dve or sp waits for a collective. tests/test_system_run.cpp
# checks every dW_l against the sum over the chips computed in float64 from the same files.
.equ STEPS 1                   # steps, one after another (a step's loads wait for the last
                               # step's all_reduce); scripts/system_bench --long sets STEPS so
                               # that the run lasts a simulated millisecond (issue 50)
.equ T 64                      # tokens per core (K)
.equ DIN 64                    # layer input width (M)
.equ DOUT 64                   # layer output width (N)
.equ LAYERS 4
.equ RANK CHIP*CORES+CORE
.equ BASE 0x100000+CORE*0x40000
.tensor X  hbm addr=0x00000 dtype=bf16 shape=576x64 init=file:dp_x.npy
.tensor DY hbm addr=0x20000 dtype=bf16 shape=576x64 init=file:dp_dy.npy
.tensor G0 hbm addr=BASE+0x0000 dtype=fp32 shape=64x64
.tensor G1 hbm addr=BASE+0x4000 dtype=fp32 shape=64x64
.tensor G2 hbm addr=BASE+0x8000 dtype=fp32 shape=64x64
.tensor G3 hbm addr=BASE+0xC000 dtype=fp32 shape=64x64
.tensor R0 hbm addr=BASE+0x20000 dtype=fp32 shape=64x64 output
.tensor R1 hbm addr=BASE+0x24000 dtype=fp32 shape=64x64 output
.tensor R2 hbm addr=BASE+0x28000 dtype=fp32 shape=64x64 output
.tensor R3 hbm addr=BASE+0x2C000 dtype=fp32 shape=64x64 output
# SBUF, per layer: X rows, dY rows, dW
.equ X_SB 0x000
.equ DY_SB 0x400
.equ G_SB 0x800
.sem loaded0    # 2 per layer; like every count below, a semaphore per layer (the engines of
.sem loaded1    # different layers finish in any order, so one shared count could mix layers)
.sem loaded2
.sem loaded3
.sem mm         # one per layer: dW_l in PSUM bank l
.sem evicted    # one per layer: dW_l in SBUF
.sem stored0    # 4 per layer
.sem stored1
.sem stored2
.sem stored3
.sem reduced    # one per layer

.queue sp
.rept s STEPS
.if s>0
  nop wait=reduced>=s*LAYERS
.endif
.rept l LAYERS
  dma_copy engine=2*l dir=hbm_to_sbuf hbm_addr=X+(4*RANK+l)*DIN*2 sbuf_addr=X_SB+l*0x100 bytes=DIN*2 count1=T hbm_stride1=DIN*2 sbuf_stride1=SBUF_PARTITION signal=(loaded0+l)+=1
  dma_copy engine=2*l+1 dir=hbm_to_sbuf hbm_addr=DY+(4*RANK+l)*DOUT*2 sbuf_addr=DY_SB+l*0x100 bytes=DOUT*2 count1=T hbm_stride1=DOUT*2 sbuf_stride1=SBUF_PARTITION signal=(loaded0+l)+=1
.endr
.rept l LAYERS
  .rept e 4
    dma_copy engine=8+e dir=sbuf_to_hbm hbm_addr=G0+l*0x4000+e*16*DOUT*4 sbuf_addr=e*16*SBUF_PARTITION+G_SB+l*0x100 bytes=DOUT*4 count1=16 hbm_stride1=DOUT*4 sbuf_stride1=SBUF_PARTITION wait=evicted>=s*LAYERS+l+1 signal=(stored0+l)+=1
  .endr
.endr
.endr

.queue pe
.rept s STEPS
.rept l LAYERS
  nc_matmul dtype=bf16 k=T m=DIN n=DOUT stationary=X_SB+l*0x100 moving=DY_SB+l*0x100 stride=2 psum_bank=l wait=(loaded0+l)>=2*(s+1) signal=mm+=1
.endr
.endr

.queue dve
.rept s STEPS
.rept l LAYERS
  tensor_copy in0=fp32 out=fp32 partitions=DIN src0=psum:l*PSUM_BANK src0_ap=[[1,DOUT]] dst=sbuf:G_SB+l*0x100 dst_ap=[[1,DOUT]] wait=mm>=s*LAYERS+l+1 signal=evicted+=1
.endr
.endr

.queue cc
.rept s STEPS
.rept l LAYERS
  all_reduce dtype=fp32 src=G0+l*0x4000 dst=R0+l*0x4000 bytes=DIN*DOUT*4 group=chips algo=multiring wait=(stored0+l)>=4*(s+1) signal=reduced+=1
.endr
.endr
