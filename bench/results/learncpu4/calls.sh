#!/bin/bash
# usage: calls.sh CALLGRIND_OUT [SRC_ROOT] : inclusive Ir per call of the learned path's callees
f=$1; root=${2:-/work/main}
cd $root && callgrind_annotate --auto=yes --show=Ir,I1mr,D1mr $f 2>/dev/null | grep "=>" | grep -E "FillSlots|SqlRefs::Get|SqlRefs::Extract|AppendBound|TemplateRefs::Compile|Schedule::Weights|RecordChosen|TryPush|GetMany|Schedule::Place|PlaceLearned|Prefetch|Scheduler::Submit|RecordRest|PickQueue|Contains|ReadTotals" | python3 -c '
import sys,re
out={}
for l in sys.stdin:
    m=re.match(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S+)(?:\s+\([^)]*\))?\s+(\S+)(?:\s+\([^)]*\))?\s+=> [^:]*:(.*) \(([\d,]+)x\)\s*$", l)
    if not m: continue
    ir=int(m.group(1).replace(",","")); n=int(m.group(5).replace(",",""))
    g=lambda x: 0 if x=="." else int(x.replace(",",""))
    name=re.sub(r"\(.*","",m.group(4).replace("(anonymous namespace)","anon"))
    k=name
    a=out.get(k,[0,0,0,0]); a[0]+=ir; a[1]+=n; a[2]+=g(m.group(2)); a[3]+=g(m.group(3)); out[k]=a
for k,(ir,n,i1,d1) in sorted(out.items(), key=lambda kv:-kv[1][0]):
    print(f"{k[-50:]:50s} calls {n:8d} Ir/call {ir/n:8.0f} I1mr/call {i1/n:6.1f} D1mr/call {d1/n:6.1f}")
'
