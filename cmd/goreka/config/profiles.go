package config

import (
	"fmt"
	"slices"
	"strings"
)

// matchProfiles reports whether a spring.config.activate.on-profile value
// matches the active profiles. The value is a comma list of expressions, any
// of which may match; an expression uses names, !, & and | and parentheses,
// as Spring's Profiles.of does ("a", "a,b", "!a", "a | b", "a & !b").
func matchProfiles(expr string, active []string) (bool, error) {
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		p := &profileParser{src: part, active: active}
		ok, err := p.parse()
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

type profileParser struct {
	src    string
	pos    int
	active []string
}

func (p *profileParser) parse() (bool, error) {
	v, err := p.or()
	if err != nil {
		return false, err
	}
	p.skip()
	if p.pos < len(p.src) {
		return false, fmt.Errorf("malformed profile expression %q: unexpected %q", p.src, p.src[p.pos:])
	}
	return v, nil
}

func (p *profileParser) skip() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
}

func (p *profileParser) peek() byte {
	p.skip()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *profileParser) or() (bool, error) {
	v, err := p.and()
	if err != nil {
		return false, err
	}
	for p.peek() == '|' {
		p.pos++
		r, err := p.and()
		if err != nil {
			return false, err
		}
		v = v || r
	}
	return v, nil
}

func (p *profileParser) and() (bool, error) {
	v, err := p.unary()
	if err != nil {
		return false, err
	}
	for p.peek() == '&' {
		p.pos++
		r, err := p.unary()
		if err != nil {
			return false, err
		}
		v = v && r
	}
	return v, nil
}

func (p *profileParser) unary() (bool, error) {
	switch p.peek() {
	case '!':
		p.pos++
		v, err := p.unary()
		return !v, err
	case '(':
		p.pos++
		v, err := p.or()
		if err != nil {
			return false, err
		}
		if p.peek() != ')' {
			return false, fmt.Errorf("malformed profile expression %q: missing )", p.src)
		}
		p.pos++
		return v, nil
	}
	start := p.pos
	for p.pos < len(p.src) && !strings.ContainsRune("!&|() ", rune(p.src[p.pos])) {
		p.pos++
	}
	if start == p.pos {
		return false, fmt.Errorf("malformed profile expression %q: missing profile name", p.src)
	}
	return slices.Contains(p.active, p.src[start:p.pos]), nil
}
