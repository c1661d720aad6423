# race.py KIND ROUNDS A B: each round, one thread on mount A and one on mount
# B, released together (a barrier), race as KIND says; prints one line per
# round: "round A-result B-result" (ok or the errno's name). Imported, it
# gives res(), the result of a call so named.
import errno, os, sys, threading, time

def res(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]

def excl(p):
    os.close(os.open(p, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))

def visible(p):  # the other mount sees what A made (its watch), 5 s at most
    for _ in range(250):
        if os.path.exists(p):
            return
        time.sleep(0.02)
    sys.exit("not seen: " + p)

def main():
    kind, rounds = sys.argv[1], int(sys.argv[2])
    ma, mb = sys.argv[3], sys.argv[4]
    ops = {
        "create": (lambda i: None,
                   lambda i: excl(f"{ma}/c{i}"), lambda i: excl(f"{mb}/c{i}")),
        "cycle": (lambda i: (os.mkdir(f"{ma}/a{i}"), os.mkdir(f"{ma}/b{i}"),
                             visible(f"{mb}/a{i}"), visible(f"{mb}/b{i}")),
                  lambda i: os.rename(f"{ma}/a{i}", f"{ma}/b{i}/a{i}"),
                  lambda i: os.rename(f"{mb}/b{i}", f"{mb}/a{i}/b{i}")),
        "rmdir": (lambda i: (os.mkdir(f"{ma}/d{i}"), visible(f"{mb}/d{i}")),
                  lambda i: os.rmdir(f"{ma}/d{i}"), lambda i: excl(f"{mb}/d{i}/f")),
    }
    prep, fa, fb = ops[kind]
    for i in range(rounds):
        prep(i)
        go = threading.Barrier(2)
        out = {}
        def run(side, f):
            go.wait()
            out[side] = res(lambda: f(i))
        ts = [threading.Thread(target=run, args=("a", fa)),
              threading.Thread(target=run, args=("b", fb))]
        for t in ts: t.start()
        for t in ts: t.join()
        print(i, out["a"], out["b"], flush=True)

if __name__ == "__main__":
    main()
