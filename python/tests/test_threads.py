"""32 threads sharing one client: every result equals the truth."""

import threading

CODES = ["sz000001", "sz000005", "sz000006", "sh600000"]


def test_32_threads_share_one_client(client, truth):
    bars = {c: [b["close_milli"] for b in truth("bars", c, "--count", "200")["bars"]] for c in CODES}
    count = truth("count", "sz")["count"]
    errors = []
    done = [0] * 32

    def work(i):
        try:
            for n in range(12):
                code = CODES[(i + n) % len(CODES)]
                if n % 3 == 0:
                    assert client.codes.count("sz") == count
                else:
                    got = client.bars.get(code, count=200).column("close_decimal")
                    assert [int(x * 1000) for x in got] == bars[code], code
                done[i] += 1
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append((i, repr(e)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "threads still blocked"
    assert not errors, errors
    assert done == [12] * 32
