#!/usr/bin/env python3
"""Lab model (CPU): how evenly the causal tile order ends, per section size (lab/perf-log.md,
seventh session). Greedy list scheduling of the tiles, in the order attn/scheduler.cuh hands them
out (sections of (batch, head) pairs, longest tile first inside a section), on 132 SMs; a tile
costs its 192-key blocks plus `over` blocks of per-tile overhead. Prints, per sweep row, the
efficiency (total work / (SMs x makespan)) of: the release's sections (at most half of L2;
`rel`), none (head-major), balanced sections (attn/sections.h; `bal`), and whole-L2 sections.
Ignores L2 misses and the warpgroup skip / trim.
  python3 lab/tools/section_order_model.py [L2_MIB]   (default 60: the H200 reports 62914560 bytes)
"""
import heapq, math
def order(b,h,M,sec):
    t=[]
    if sec<=0:
        for bh in range(b*h):
            for m in range(M-1,-1,-1): t.append((m,bh))
    else:
        P=b*h
        for s0 in range(0,P,sec):
            pairs=min(sec,P-s0)
            for idx in range(pairs*M):
                t.append((M-1-idx//pairs, s0+idx%pairs))
    return t
def sim(b,h,hkv,sq,sk,sec,sms=132,BM=128,BN=192,over=2.0):
    M=math.ceil(sq/BM)
    cost=lambda m: math.ceil(min(sk, (m+1)*BM+sk-sq)/BN)+over
    ts=order(b,h,M,sec)
    heap=[0.0]*sms
    for (m,bh) in ts:
        s=heapq.heappop(heap); heapq.heappush(heap,s+cost(m))
    total=sum(cost(m) for m,_ in ts)
    return total/sms/max(heap)
import sys
L2=int(sys.argv[1] if len(sys.argv) > 1 else 60)*2**20  # MiB: the H200 reports 60
for (b,h,hkv,sq,sk) in [(1,32,8,2048,16384),(2,32,32,8192,8192),(2,32,8,8192,8192),(1,32,32,16384,16384),(4,16,2,4096,4096),(16,32,32,1024,1024),(8,32,32,2048,2048),(4,32,32,4096,4096)]:
    per=max(1, sk*128*2//(h//hkv))
    cap=max(1,min(L2//2//per, b*h)); P=b*h
    n=math.ceil(P/cap); bal=math.ceil(P/n)
    full=max(1,min(L2//per,P))
    print((b,h,hkv,sq,sk), "cap",cap,"bal",bal, " eff: rel %.4f none %.4f bal %.4f div1(%d) %.4f"%(sim(b,h,hkv,sq,sk,cap), sim(b,h,hkv,sq,sk,0), sim(b,h,hkv,sq,sk,bal), full, sim(b,h,hkv,sq,sk,full)))
print("---- overhead sensitivity (rel / bal)")
for over in (0.5,1,3):
    for (b,h,hkv,sq,sk) in [(1,32,8,2048,16384),(2,32,32,8192,8192),(16,32,32,1024,1024),(8,32,32,2048,2048),(4,32,32,4096,4096)]:
        per=max(1, sk*128*2//(h//hkv)); cap=max(1,min(L2//2//per, b*h)); P=b*h
        n=math.ceil(P/cap); bal=math.ceil(P/n)
        print(over,(b,h,hkv,sq,sk),"%.4f %.4f"%(sim(b,h,hkv,sq,sk,cap,over=over),sim(b,h,hkv,sq,sk,bal,over=over)))
