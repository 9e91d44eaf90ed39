# Row softmax of an [8, 64] BF16 tile for the size-8 core (test_core_rtl, the waves test):
# DMA in, vector max, scalar exp with row sums and reciprocal, vector scale, DMA out.
.tensor X   hbm  addr=0x00000 dtype=bf16 shape=8x64 init=random seed=21
.tensor Y   hbm  addr=0x20000 dtype=bf16 shape=8x64 output
.tensor x   sbuf addr=0x0000 dtype=bf16 shape=8x64
.tensor mx  sbuf addr=0x0400 dtype=fp32 shape=8x1
.tensor nmx sbuf addr=0x0404 dtype=fp32 shape=8x1
.tensor e   sbuf addr=0x0800 dtype=fp32 shape=8x64
.tensor sum sbuf addr=0x1000 dtype=fp32 shape=8x1
.tensor r   sbuf addr=0x1004 dtype=fp32 shape=8x1
.tensor y   sbuf addr=0x1400 dtype=bf16 shape=8x64
.sem loaded
.sem reduced
.sem exped
.sem scaled
.queue sp
.rept i 8
  dma_copy engine=i dir=hbm_to_sbuf hbm_addr=X+i*128 sbuf_addr=i*SBUF_PARTITION+x bytes=128 count1=1 signal=loaded+=1
.endr
.rept i 8
  dma_copy engine=i dir=sbuf_to_hbm hbm_addr=Y+i*128 sbuf_addr=i*SBUF_PARTITION+y bytes=128 count1=1 wait=scaled>=1
.endr
.queue dve
tensor_reduce op0=max in0=bf16 out=fp32 partitions=8 src0=x src0_ap=[[1,64]] dst=mx dst_ap=[[1,1]] wait=loaded>=8
tensor_scalar op0=multiply s0=-1 partitions=8 src0=mx src0_ap=[[1,1]] dst=nmx dst_ap=[[1,1]] signal=reduced+=1
tensor_scalar op0=multiply s0=sbuf:r in0=fp32 out=bf16 partitions=8 src0=e src0_ap=[[1,64]] dst=y dst_ap=[[1,64]] wait=exped>=1 signal=scaled+=1
.queue act
activation func=exp scale=1.0 bias=sbuf:nmx in0=bf16 out=fp32 partitions=8 src0=x src0_ap=[[1,64]] dst=e dst_ap=[[1,64]] acc_enable=1 acc_addr=sum wait=reduced>=1
activation func=reciprocal partitions=8 src0=sum src0_ap=[[1,1]] dst=r dst_ap=[[1,1]] signal=exped+=1
