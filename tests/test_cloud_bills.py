

def test_effective_rates_after_credits_and_discounts(wh):
    got = {(p, m): r for p, m, *r in rows(
        wh, "SELECT provider, model, list_usd, credits_usd, discounts_usd, net_usd, effective_discount "
            "FROM marts.effective_rates WHERE month = DATE '2026-06-01'")}
    # 87.450004 - 1.00 credit - 0.45 EDP discount = 86.000004: 1.45 / 87.450004 = 1.658 % below list
    b = got["bedrock", "claude-sonnet-4-5"]
    assert b[:4] == [D("87.450004"), D("-1"), D("-0.45"), D("86.000004")]
    assert b[4] == pytest.approx(1.45 / 87.450004)
    assert got["azure", "gpt-4o"][:4] == [D("7.80"), D("0"), D("0"), D("7.80")]
    # GCP credits inside the lines: -0.10 committed use, -0.40 free trial
    assert got["vertex_ai", "gemini-2.5-pro"][:4] == [D("125.025"), D("-0.5"), D("0"), D("124.525")]
