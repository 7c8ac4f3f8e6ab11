package cache

// CRC-32 (IEEE, reflected) of a concatenation from the CRCs of its parts:
// crc(A||B) = crc(A)·x^(8·len(B)) mod P  xor  crc(B), the polynomial
// arithmetic zlib's crc32_combine uses (and with it parallel gzip tools,
// which compress pieces apart and join them into one gzip member).

const crcPoly = 0xedb88320 // IEEE polynomial, bit-reversed

// multModP multiplies a and b modulo P; bit 31 is x^0 (reflected form).
func multModP(a, b uint32) uint32 {
	m := uint32(1) << 31
	var p uint32
	for {
		if a&m != 0 {
			p ^= b
			if a&(m-1) == 0 {
				break
			}
		}
		m >>= 1
		if b&1 != 0 {
			b = b>>1 ^ crcPoly
		} else {
			b >>= 1
		}
	}
	return p
}

// x2nTable[k] is x^(2^k) mod P.
var x2nTable = func() (t [32]uint32) {
	p := uint32(1) << 30 // x^1
	t[0] = p
	for k := 1; k < len(t); k++ {
		p = multModP(p, p)
		t[k] = p
	}
	return t
}()

// x2nModP is x^(n·2^k) mod P.
func x2nModP(n uint64, k uint) uint32 {
	p := uint32(1) << 31 // x^0
	for n != 0 {
		if n&1 != 0 {
			p = multModP(x2nTable[k&31], p)
		}
		n >>= 1
		k++
	}
	return p
}

// crc32Combine returns the CRC-32 of A||B given crc1 of A, crc2 of B and
// the length of B. It costs O(log len2) multiplications, not a pass over B.
func crc32Combine(crc1, crc2 uint32, len2 int64) uint32 {
	if len2 <= 0 {
		return crc1
	}
	return multModP(x2nModP(uint64(len2), 3), crc1) ^ crc2
}
