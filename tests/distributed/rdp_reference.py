#!/usr/bin/env python3
"""Reference RDP values for tests/distributed/rdp_accountant_test.cpp, computed
independently of any accountant's series: A_alpha = E_{z ~ N(0, sigma^2)}
[((1 - q) + q exp((2 z - 1) / (2 sigma^2)))^alpha] by numerical integration
with mpmath at 40 digits (the definition in Mironov, Talwar and Zhang 2019,
Section 3), RDP = log(A_alpha) / (alpha - 1), then epsilon by Balle et al.
2020, Theorem 21, over Opacus' default orders. Needs python3-mpmath.
Run: python3 tests/distributed/rdp_reference.py"""
import mpmath as mp

mp.mp.dps = 40


def log_a(q, sigma, alpha):
    q, sigma, alpha = mp.mpf(q), mp.mpf(sigma), mp.mpf(alpha)

    def integrand(z):
        ratio = (1 - q) + q * mp.exp((2 * z - 1) / (2 * sigma**2))
        return mp.npdf(z, 0, sigma) * ratio**alpha

    # Break points where the mass sits: around 0 (the null), around 1/2 + sigma^2
    # log(1/q - 1) (where the mixture switches) and around alpha (the tail term).
    z0 = sigma**2 * mp.log(1 / q - 1) + mp.mpf(1) / 2
    points = sorted({-12 * sigma, mp.mpf(0), mp.mpf(1), z0, alpha, alpha + 12 * sigma})
    return mp.log(mp.quad(integrand, [-mp.inf] + points + [mp.inf], maxdegree=10))


def rdp(q, sigma, alpha):
    return log_a(q, sigma, alpha) / (alpha - 1)


def default_orders():
    return [1 + x / mp.mpf(10) for x in range(1, 100)] + [mp.mpf(x) for x in range(12, 64)]


def epsilon(q, sigma, steps, delta):
    best = (mp.inf, None)
    for a in default_orders():
        eps = steps * rdp(q, sigma, a) - (mp.log(delta) + mp.log(a)) / (a - 1) + mp.log((a - 1) / a)
        if eps < best[0]:
            best = (eps, a)
    return best


if __name__ == "__main__":
    for q, sigma, alpha in [(0.01, 1.0, 2.5), (0.01, 1.0, 7), (0.01, 1.0, 31.7), (0.1, 0.8, 1.5),
                            (0.1, 0.8, 12), (256 / 60000, 1.1, 10.3), (0.04, 1.5, 63)]:
        print(f"rdp q={q!r} sigma={sigma} alpha={alpha}: {mp.nstr(rdp(q, sigma, alpha), 17)}")
    for q, sigma, steps, delta in [(0.04, 1.5, 2250, 1e-5), (256 / 60000, 1.1, 14062, 1e-5),
                                   (0.01, 1.0, 1000, 1e-6)]:
        eps, order = epsilon(q, sigma, steps, delta)
        print(f"epsilon q={q!r} sigma={sigma} steps={steps} delta={delta}: "
              f"{mp.nstr(eps, 17)} at order {mp.nstr(order, 4)}")
