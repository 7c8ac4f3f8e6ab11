package config

import (
	"strings"
	"testing"
)

func TestCodecNames(t *testing.T) {
	c := mustLoad(t, nil, nil, nil)
	if c.EurekaServer.JSONCodecName != "LegacyJacksonJson" || c.EurekaServer.XMLCodecName != "XStreamXml" {
		t.Fatalf("defaults %q %q", c.EurekaServer.JSONCodecName, c.EurekaServer.XMLCodecName)
	}
	c = mustLoad(t, []string{"--eureka.server.json-codec-name=JacksonJson"}, []string{"EUREKA_SERVER_XMLCODECNAME=JacksonXml"}, nil)
	if c.EurekaServer.JSONCodecName != "JacksonJson" || c.EurekaServer.XMLCodecName != "JacksonXml" {
		t.Fatalf("set %q %q", c.EurekaServer.JSONCodecName, c.EurekaServer.XMLCodecName)
	}
	for _, arg := range []string{"--eureka.server.json-codec-name=jacksonjson", "--eureka.server.json-codec-name=XStreamJson", "--eureka.server.xml-codec-name=JacksonXmlMini"} {
		_, err := Load([]string{arg}, nil, t.TempDir())
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), value) {
			t.Errorf("%s: err = %v, want one naming the key and the value", arg, err)
		}
	}
}
