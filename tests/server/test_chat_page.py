"""The chat page at / in a real headless Chromium (Debian's chromium + chromedriver, driven by selenium)."""

from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER), reason="needs chromium and chromedriver (.ci/run installs them)"
)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def wait_for(browser, condition, timeout=60):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(lambda _d: condition())


def test_the_page_streams_an_answer_as_text(browser, server, model_id):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(server.url + "/")
    wait_for(browser, lambda: model_id in browser.find_element(By.ID, "model").text)
    question = '<img src=x onerror="document.title=1"> <b>bold?</b>'
    box = browser.find_element(By.ID, "prompt")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)  # Enter sends
    wait_for(
        browser,
        lambda: (
            browser.find_element(By.ID, "send").is_enabled()
            and browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")
        ),
    )
    user = browser.find_element(By.CSS_SELECTOR, ".msg.user")
    assert user.text == question  # shown as the characters typed
    answer = browser.find_element(By.CSS_SELECTOR, ".msg.assistant")
    assert answer.text.strip()
    # model text and user text are inserted as text: no element was made from either
    assert browser.execute_script("return document.querySelectorAll('.msg *').length") == 0
    assert browser.title != "1"
    assert "tokens" in browser.find_element(By.ID, "status").text
    assert not browser.find_elements(By.CSS_SELECTOR, ".msg.error")
    # a second turn sends the conversation so far
    box.send_keys("And again?", Keys.ENTER)
    wait_for(
        browser,
        lambda: (
            len(browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")) == 2
            and browser.find_element(By.ID, "send").is_enabled()
        ),
    )
    browser.find_element(By.ID, "new").click()
    assert not browser.find_elements(By.CSS_SELECTOR, ".msg")


def test_the_page_shows_an_api_error(browser, host, model_id):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    from .conftest import serve

    locked = serve(host, api_key="s3cret")
    try:
        browser.get(locked.url + "/")
        box = browser.find_element(By.ID, "prompt")
        box.send_keys("Hello", Keys.ENTER)
        wait_for(browser, lambda: browser.find_elements(By.CSS_SELECTOR, ".msg.error"))
        assert "API key" in browser.find_element(By.CSS_SELECTOR, ".msg.error").text
        browser.find_element(By.ID, "key").send_keys("s3cret")
        box.send_keys("Hello", Keys.ENTER)
        wait_for(
            browser,
            lambda: (
                browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")
                and browser.find_element(By.ID, "send").is_enabled()
            ),
        )
        assert browser.find_element(By.CSS_SELECTOR, ".msg.assistant").text.strip()
    finally:
        locked.stop()
