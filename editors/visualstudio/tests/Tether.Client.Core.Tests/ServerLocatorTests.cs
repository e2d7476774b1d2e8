using System.Collections.Generic;
using System.IO;
using NUnit.Framework;

namespace Tether.Client.Core.Tests
{
    [TestFixture]
    public class ServerLocatorTests
    {
        [Test]
        public void TheSettingWinsAndAMissingOneIsAnErrorNotAFallback()
        {
            var files = new HashSet<string> { "/opt/tether", "/ext/server/tether", "/usr/bin/tether" };
            Assert.AreEqual("/opt/tether", ServerLocator.Resolve(" \"/opt/tether\" ", "/ext", "/usr/bin", false, files.Contains));
            var e = Assert.Throws<FileNotFoundException>(() => ServerLocator.Resolve("/nope/tether", "/ext", "/usr/bin", false, files.Contains));
            StringAssert.Contains("/nope/tether", e.Message);
            StringAssert.Contains("Server path", e.Message);
        }

        [Test]
        public void BundledThenPath()
        {
            var files = new HashSet<string> { "/ext/server/tether", "/usr/bin/tether" };
            Assert.AreEqual("/ext/server/tether", ServerLocator.Resolve("", "/ext", "/usr/local/bin:/usr/bin", false, files.Contains));
            files.Remove("/ext/server/tether");
            Assert.AreEqual("/usr/bin/tether", ServerLocator.Resolve(null, "/ext", "/usr/local/bin::/usr/bin", false, files.Contains));
        }

        [Test]
        public void WindowsUsesTheExeNameAndSemicolons()
        {
            var files = new HashSet<string> { Path.Combine("C:\\tools", "tether.exe") };
            Assert.AreEqual(Path.Combine("C:\\tools", "tether.exe"), ServerLocator.Resolve(null, null, "C:\\Windows;C:\\tools", true, files.Contains));
        }

        [Test]
        public void NothingFoundListsWhereItLooked()
        {
            var e = Assert.Throws<FileNotFoundException>(() => ServerLocator.Resolve(null, "/ext", "/a:/b", false, p => false));
            StringAssert.Contains("/ext/server/tether", e.Message);
            StringAssert.Contains("/a/tether", e.Message);
            StringAssert.Contains("/b/tether", e.Message);
            e = Assert.Throws<FileNotFoundException>(() => ServerLocator.Resolve(null, null, null, false, p => false));
            StringAssert.Contains("nowhere", e.Message);
        }
    }
}
